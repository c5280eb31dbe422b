//! Figures as plain data ([`Figure`], [`FigureLine`]): the binary renders them.

use serde::Serialize;

/// One line of a figure.
#[derive(Debug, Clone, Serialize)]
pub struct FigureLine {
    /// Legend text.
    pub name: String,
    /// x values.
    pub x: Vec<f64>,
    /// y values.
    pub y: Vec<f64>,
}

/// A figure as plain data: lines over a shared x-axis, optional horizontal rules.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// File stem (`recovery-sweep`).
    pub id: String,
    /// Title.
    pub title: String,
    /// x-axis label.
    pub x_label: String,
    /// y-axis label.
    pub y_label: String,
    /// The lines.
    pub lines: Vec<FigureLine>,
    /// Horizontal reference lines `(y, label)`.
    pub rules: Vec<(f64, String)>,
}

impl Figure {
    /// A figure with no lines yet.
    pub fn new(id: &str, title: &str, x_label: &str, y_label: &str) -> Self {
        Figure {
            id: id.into(),
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            lines: vec![],
            rules: vec![],
        }
    }

    /// Add a line.
    pub fn line(mut self, name: &str, x: Vec<f64>, y: Vec<f64>) -> Self {
        self.lines.push(FigureLine { name: name.into(), x, y });
        self
    }

    /// Add a horizontal rule.
    pub fn rule(mut self, y: f64, label: &str) -> Self {
        self.rules.push((y, label.into()));
        self
    }
}
