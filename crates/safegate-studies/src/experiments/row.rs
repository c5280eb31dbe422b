//! One checked claim of the seed: a [`Row`] (the seed's figure, ours, the tolerance) and its
//! [`Verdict`].

use serde::Serialize;

/// A row's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Within tolerance of the seed's figure.
    Pass,
    /// Outside tolerance: the measurement disagrees with the seed.
    Fail,
    /// Reported for reading, not checked (e.g. a worst case from an unknown random stream).
    Info,
}

/// One checked claim.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Stable identifier (`recovery-74.5`).
    pub id: String,
    /// The claim, in words.
    pub claim: String,
    /// The seed's figure, as printed.
    pub seed: String,
    /// Ours, formatted like the seed's.
    pub ours: String,
    /// The tolerance, in words.
    pub tolerance: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Whether the row passes (`Info` rows count as passing).
    pub pass: bool,
    /// The seed's figure as a number, where there is one.
    pub seed_value: Option<f64>,
    /// Our figure as a number, where there is one.
    pub value: Option<f64>,
    /// Anything a reader needs to read the row right.
    pub note: Option<String>,
}

impl Row {
    /// A row with a verdict decided by the caller.
    pub fn new(
        id: &str,
        claim: &str,
        seed: impl Into<String>,
        ours: impl Into<String>,
        tolerance: &str,
        ok: bool,
    ) -> Self {
        let verdict = if ok { Verdict::Pass } else { Verdict::Fail };
        Row {
            id: id.to_string(),
            claim: claim.to_string(),
            seed: seed.into(),
            ours: ours.into(),
            tolerance: tolerance.to_string(),
            verdict,
            pass: ok,
            seed_value: None,
            value: None,
            note: None,
        }
    }

    /// A numeric row that passes when `|ours − seed| ≤ tol`, both shown with `decimals`.
    pub fn close(id: &str, claim: &str, seed: f64, ours: f64, tol: f64, decimals: usize) -> Self {
        let ok = (ours - seed).abs() <= tol + 1e-9 && ours.is_finite();
        let tol_text = if tol < 1e-3 { format!("±{tol:e}") } else { format!("±{tol}") };
        let mut r = Row::new(id, claim, format!("{seed:.decimals$}"), format!("{ours:.decimals$}"), &tol_text, ok);
        r.seed_value = Some(seed);
        r.value = Some(ours);
        r
    }

    /// An informational row (never fails).
    pub fn info(id: &str, claim: &str, seed: impl Into<String>, ours: impl Into<String>, note: &str) -> Self {
        let mut r = Row::new(id, claim, seed, ours, "report only", true);
        r.verdict = Verdict::Info;
        r.note = Some(note.to_string());
        r
    }

    /// Attach a note.
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// Attach numeric values.
    pub fn values(mut self, seed: Option<f64>, ours: Option<f64>) -> Self {
        self.seed_value = seed;
        self.value = ours;
        self
    }
}
