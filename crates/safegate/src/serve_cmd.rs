//! `safegate serve`: the lab page ([`safegate_web`]) on a local port until Ctrl-C or
//! SIGTERM.

use std::net::IpAddr;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use safegate_live::fleet::GateCommand;
use safegate_web::{ServeConfig, Stopped};

use crate::runtime::runtime;

/// Flags of `safegate serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Port to listen on; 0 picks a free one (the address is printed).
    #[arg(long, default_value_t = 8787)]
    pub(crate) port: u16,
    /// Address to bind; anything but loopback exposes an unauthenticated simulator.
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) bind: IpAddr,
}

pub(crate) fn run(args: &ServeArgs) -> Result<ExitCode> {
    let gate = GateCommand { program: std::env::current_exe()?, args: vec!["fleet-gate".into()] };
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind((args.bind, args.port))
            .await
            .with_context(|| format!("binding {}:{}", args.bind, args.port))?;
        let addr = listener.local_addr()?;
        if !args.bind.is_loopback() {
            eprintln!("warning: {} is not loopback; the page and its API have no authentication", args.bind);
        }
        println!("safegate serve: http://{addr}/ (Ctrl-C stops)");
        use std::io::Write as _;
        std::io::stdout().flush()?;
        let signalled = crate::stop::signal()?;
        let shutdown = async move {
            signalled.await;
        };
        match safegate_web::serve(listener, ServeConfig { gate }, shutdown).await.context("serving")? {
            Stopped::Clean => {}
            Stopped::RunStillStopping(wait) => {
                eprintln!("warning: a run was still stopping after {wait:?}; its servers may be left");
            }
        }
        eprintln!("safegate serve: stopped");
        Ok(ExitCode::SUCCESS)
    })
}
