//! Where `--svg` sends a chart: a file, or standard output with the table on standard error.

/// Where `--svg` sends a command's chart: a file, or standard output for `-` (the table then
/// goes to standard error, where a terminal still shows it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ChartTo {
    /// A file.
    File(std::path::PathBuf),
    /// Standard output (`--svg -`).
    Stdout,
}

impl ChartTo {
    /// The chart's destination from `--svg`, `--no-svg` and `--json`: `--svg` when given
    /// (`-` is standard output, refused with `--json`, whose document stdout carries), else
    /// `default` when a table is printed, else none (a `--json` run writes no file it was not
    /// asked for).
    pub(crate) fn from_flags(
        svg: Option<&std::path::Path>,
        no_svg: bool,
        json: bool,
        default: &str,
    ) -> anyhow::Result<Option<Self>> {
        Ok(match svg {
            Some(p) if p.as_os_str() == "-" => {
                if json {
                    anyhow::bail!("--svg -: standard output carries the --json document; give --svg a file path");
                }
                Some(Self::Stdout)
            }
            Some(p) => Some(Self::File(p.to_path_buf())),
            None if no_svg || json => None,
            None => Some(Self::File(default.into())),
        })
    }

    /// Writes `svg` there.
    pub(crate) fn write(&self, svg: &str) -> anyhow::Result<()> {
        use anyhow::Context as _;
        match self {
            Self::File(path) => {
                std::fs::write(path, svg).with_context(|| format!("writing the chart to {}", path.display()))
            }
            Self::Stdout => {
                print!("{svg}");
                Ok(())
            }
        }
    }

    /// Prints the table and the other text: to standard error when the chart takes stdout.
    /// (`print!`, so that a closed pipe or a full disk ends the command as every other
    /// output does: `main`'s hook.)
    pub(crate) fn say(chart: Option<&Self>, text: &str) {
        match chart {
            Some(Self::Stdout) => eprint!("{text}"),
            _ => print!("{text}"),
        }
    }

    /// The path to name in the output and the JSON (`-` for standard output).
    pub(crate) fn shown(&self) -> String {
        match self {
            Self::File(p) => p.display().to_string(),
            Self::Stdout => "-".into(),
        }
    }
}
