//! Drive requests through one stack of `safegate bench overhead` on one thread, for an
//! instruction count under callgrind: `WARM` requests first (the layer's clock calibration
//! and its sampling's adaptation happen there), then `N` in [`counted_requests`], the one
//! function `scripts/instructions` has callgrind count (`--toggle-collect`). The script
//! prints the count per request, side by side for every stack.
//!
//! ```text
//! cargo run --release -p safegate-bench --example instructions -- admission 100000
//! ```

use std::process::ExitCode;

/// Requests driven before counting.
const WARM: u64 = 20_000;

/// The counted requests (never inlined: its name is what callgrind collects).
#[inline(never)]
fn counted_requests(drive: &mut dyn FnMut(u64), n: u64) {
    drive(n);
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (stack, n) = match &args[..] {
        [s, n] => (s.as_str(), n.parse::<u64>()),
        _ => {
            let names = safegate_bench::overhead::stack_names().unwrap_or_default();
            eprintln!("usage: instructions STACK N   (STACK: {})", names.join(", "));
            return ExitCode::from(2);
        }
    };
    let n = match n {
        Ok(n) if (1..=100_000_000).contains(&n) => n,
        _ => {
            eprintln!("N = {:?} is out of range: allowed an integer in [1, 1e8]", args[1]);
            return ExitCode::from(2);
        }
    };
    let mut drive = match safegate_bench::overhead::driver(stack) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    drive(WARM);
    counted_requests(&mut drive, n);
    ExitCode::SUCCESS
}
