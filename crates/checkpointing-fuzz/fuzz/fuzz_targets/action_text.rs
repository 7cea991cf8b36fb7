#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| checkpointing_fuzz::action_text(data));
