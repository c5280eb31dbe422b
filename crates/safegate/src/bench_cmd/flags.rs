//! A harness's error as the CLI shows it: the input field it names (`burst_secs`) becomes
//! the flag that sets it (`--burst-secs`).

/// `e` with its field named as a flag.
pub(super) fn flagged(e: safegate_bench::Error) -> anyhow::Error {
    anyhow::Error::new(e.rename_field(|field| format!("--{}", field.replace('_', "-"))))
}
