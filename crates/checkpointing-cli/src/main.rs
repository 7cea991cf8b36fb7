//! The `checkpointing` command (see the library for its commands).

fn main() -> std::process::ExitCode {
    checkpointing_cli::main()
}
