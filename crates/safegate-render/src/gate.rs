//! `safegate gate`'s lines: a queue controller's status each second and its report at the
//! end, as text or JSON.

use safegate_queue::{ControllerReport, Status};

/// One status line: text for stderr, or one JSON object; `line` is the boundary's line θ·Q.
pub fn status(s: &Status, line: u64, json: bool) -> String {
    let st = &s.stats;
    let conc = s.action.concurrency.map_or_else(|| "all".to_string(), |c| c.to_string());
    let (interventions, backups) = s.filter.map_or((0, 0), |f| (f.interventions, f.infeasible));
    if json {
        serde_json::json!({
                "t": s.t, "leading": s.leading, "epoch": s.epoch, "backlog": st.waiting(), "line": line,
                "bound": s.bound, "share": s.action.admit, "concurrency": s.action.concurrency,
                "shed_retries": s.action.shed_retries,
                "offered": st.offered, "admitted": st.admitted, "completed": st.completed, "failed": st.failed,
                "dead": st.dead, "retried": st.retried, "in_service": st.in_service,
                "interventions": interventions, "backups": backups,
        })
        .to_string()
    } else {
        format!(
            "{:>8.1} s  {}  backlog {} (line {line})  share {:.3}  workers {conc}{}  admitted {}  completed {}  failed {}  dead {}  filter: {interventions} interventions, {backups} backups",
            s.t,
            if s.leading { "leading  " } else { "following" },
            st.waiting(),
            s.action.admit,
            if s.action.shed_retries { "  retries shed" } else { "" },
            st.admitted,
            st.completed,
            st.failed,
            st.dead
        )
    }
}

/// The report at the end: a text line, or one JSON object.
pub fn report(r: &ControllerReport, json: bool) -> String {
    if json {
        serde_json::json!({"decisions": r.decisions, "published": r.published, "takeovers": r.takeovers, "errors": r.errors})
            .to_string()
    } else {
        format!(
            "safegate gate: {} decisions, {} grants published, led {} time(s), {} periods lost to Redis errors",
            r.decisions, r.published, r.takeovers, r.errors
        )
    }
}
