//! The `checkpointing` command (see the library for its commands).

fn main() -> std::process::ExitCode {
    // A closed stdout (`checkpointing compare ... | head`) ends the command
    // quietly, as it does other Unix tools, instead of making `println!`
    // panic: restore SIGPIPE's default action, which Rust's runtime ignores.
    #[cfg(unix)]
    // SAFETY: at the start of `main`, before any thread is spawned, setting
    // a signal's disposition to its default races with nothing.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    checkpointing_cli::main()
}
