//! The command's transcripts in the guide (`docs/src/*.md`) and the README
//! are its real output: every ```console block that starts with
//! `$ cargo checkpointing ARGS` is run, and what the block shows must be
//! what the command prints (a block ending in a line `...` shows the
//! beginning only).

use std::path::Path;
use std::process::Command;

/// What the built binary prints for `args`; it must succeed.
fn stdout(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_checkpointing"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// (file, arguments, expected lines, whether the block shows only the start).
fn transcripts() -> Vec<(String, Vec<String>, Vec<String>, bool)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    let mut chapters: Vec<_> = std::fs::read_dir(root.join("docs/src"))
        .expect("docs/src")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    files.extend(chapters);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line.trim() != "```console" {
                continue;
            }
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            let Some(args) = block
                .first()
                .and_then(|l| l.strip_prefix("$ cargo checkpointing "))
            else {
                continue;
            };
            let mut expected: Vec<String> = block[1..].iter().map(|l| l.to_string()).collect();
            let partial = expected.last().is_some_and(|l| l == "...");
            if partial {
                expected.pop();
            }
            found.push((
                file.display().to_string(),
                args.split_whitespace().map(String::from).collect(),
                expected,
                partial,
            ));
        }
    }
    found
}

#[test]
fn the_documented_transcripts_are_the_commands_output() {
    let transcripts = transcripts();
    assert!(
        transcripts.len() >= 4,
        "found {} transcripts",
        transcripts.len()
    );
    for (file, args, expected, partial) in transcripts {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = stdout(&args);
        let got: Vec<&str> = out.lines().collect();
        let got = if partial {
            &got[..expected.len().min(got.len())]
        } else {
            &got[..]
        };
        assert_eq!(
            got,
            expected
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .as_slice(),
            "{file}: `checkpointing {}` prints something else; update the transcript",
            args.join(" ")
        );
    }
}
