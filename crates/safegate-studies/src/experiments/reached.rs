//! Which of the rows shown an override reached, once [`check_overrides`](super::check_overrides)
//! has accepted it (some selected row reads it): per row the keys it does not read
//! ([`unread_by`]), per key the rows it missed in words ([`rows_not_reading`]), and the rows
//! as `safegate reproduce --json` lists them ([`rows_json`]).

use serde_json::Value;

use super::{find, row_reads, Row};

/// The keys of `keys` that row `row` of experiment `experiment` does not read (all of them
/// for an experiment not in the registry).
pub fn unread_by(experiment: &str, row: &str, keys: &[String]) -> Vec<String> {
    let Some(e) = find(experiment) else { return keys.to_vec() };
    keys.iter().filter(|k| !row_reads(e, row, k)).cloned().collect()
}

/// The rows of `rows` (each with its experiment's id) that do not read `key`, in words
/// (`5 of 34 rows: severity (5 rows), usl`: an experiment none of whose several rows reads
/// it by name and count, else the rows' ids), or `None` when every row reads it.
pub fn rows_not_reading(key: &str, rows: &[(&'static str, &Row)]) -> Option<String> {
    let mut by_experiment: Vec<(&str, Vec<&str>, usize)> = Vec::new();
    for (exp, row) in rows {
        let missed = !unread_by(exp, &row.id, &[key.to_string()]).is_empty();
        match by_experiment.iter_mut().find(|(e, _, _)| e == exp) {
            Some((_, ids, n)) => {
                *n += 1;
                if missed {
                    ids.push(&row.id);
                }
            }
            None => by_experiment.push((exp, if missed { vec![&row.id] } else { vec![] }, 1)),
        }
    }
    let count: usize = by_experiment.iter().map(|(_, ids, _)| ids.len()).sum();
    if count == 0 {
        return None;
    }
    let parts: Vec<String> = by_experiment
        .iter()
        .filter(|(_, ids, _)| !ids.is_empty())
        .map(|(exp, ids, n)| if ids.len() == *n && *n > 1 { format!("{exp} ({n} rows)") } else { ids.join(", ") })
        .collect();
    Some(format!("{count} of {} rows: {}", rows.len(), parts.join(", ")))
}

/// The rows as `safegate reproduce --json` lists them: each row's fields, its
/// `experiment`, and with overrides (`keys`, the accepted ones) the keys it did not read as
/// `overrides_not_read`.
pub fn rows_json(rows: &[(&'static str, &Row)], keys: &[String]) -> Vec<Value> {
    rows.iter()
        .map(|(exp, row)| {
            let mut v = serde_json::to_value(row).expect("rows serialise");
            v["experiment"] = Value::from(*exp);
            if !keys.is_empty() {
                v["overrides_not_read"] = Value::from(unread_by(exp, &row.id, keys));
            }
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row named `id` (its id says which of its experiment's row groups it is in).
    fn row(id: &str) -> Row {
        Row::new(id, "a claim", "1", "1", "exact", true)
    }

    #[test]
    fn the_rows_a_key_misses_are_named_by_experiment_or_by_id() {
        let (ceiling, game) = ("ceiling", "game");
        let (c, g1, g2) = (row("ceiling-x"), row("game-a"), row("game-b"));
        let rows = [(ceiling, &c), (game, &g1), (game, &g2)];
        // The ceiling reads the pool; the game reads no scenario key.
        assert_eq!(rows_not_reading("model.rate", &rows).as_deref(), Some("2 of 3 rows: game (2 rows)"));
        assert_eq!(unread_by(game, "game-a", &["model.rate".into()]), ["model.rate"]);
        assert!(unread_by(ceiling, "ceiling-x", &["model.rate".into()]).is_empty());
        assert_eq!(unread_by("no-such", "x", &["a".into()]), ["a"]);
        assert_eq!(rows_not_reading("model.rate", &rows[..1]), None);
        let one_game = [(ceiling, &c), (game, &g1)];
        assert_eq!(rows_not_reading("model.rate", &one_game).as_deref(), Some("1 of 2 rows: game-a"));
    }

    #[test]
    fn the_json_rows_name_their_experiment_and_with_overrides_what_they_missed() {
        let g = row("game-a");
        let plain = rows_json(&[("game", &g)], &[]);
        assert_eq!(plain[0]["experiment"], "game");
        assert_eq!(plain[0]["id"], "game-a");
        assert!(plain[0].get("overrides_not_read").is_none());
        let with = rows_json(&[("game", &g)], &["model.rate".into()]);
        assert_eq!(with[0]["overrides_not_read"], serde_json::json!(["model.rate"]));
    }
}
