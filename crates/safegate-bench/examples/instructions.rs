//! Drive `N` requests through one stack of `safegate bench overhead` on one thread, for an
//! instruction count under callgrind: `scripts/instructions` runs it at two sizes per stack
//! and prints the difference per request (setup cancels out), side by side.
//!
//! ```text
//! cargo run --release -p safegate-bench --example instructions -- admission 100000
//! ```

use std::process::ExitCode;

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
    match safegate_bench::overhead::drive_named(stack, n) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
