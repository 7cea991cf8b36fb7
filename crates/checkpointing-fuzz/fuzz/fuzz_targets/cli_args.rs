#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| checkpointing_fuzz::cli_args(data));
