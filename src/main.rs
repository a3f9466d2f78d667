//! The `lase` command line: a thin layer that parses arguments and calls the library
//! (one file per command under cli/).

mod cli;

use anyhow::Result;
use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() -> Result<()> {
    // `--time-limit` counts from here: a time slot includes reading the data.
    cli::train::mark_process_start();
    // Before libtorch creates its threads, so they inherit it.
    lase::runtime::flush_denormals();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("LASE_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: a log redirected to a file stays plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = cli::Cli::parse();
    if !cli.command.is_server() {
        // Like other Unix tools, stop quietly when stdout is a closed pipe (`lase ... |
        // head`) instead of panicking in println!. Not for the server, whose sockets
        // must not kill it when a client goes away.
        // SAFETY: restoring the default disposition of one signal before any thread
        // starts (libtorch's pool starts with the first tensor operation, in cli::run).
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    cli::run(cli)
}
