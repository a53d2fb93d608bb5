//! Print / parse round trip: every `#[pld::program]` in the repository's examples and tests
//! prints as pld source that parses back to an equal program, the generated `__auto_*` signals
//! included as named, hoisted bindings (exactly where PyPTO's printer loses them).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_example_and_test_program_round_trips() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["examples", "tests", "demo"] {
        rust_files(&root.join(dir), &mut files);
    }
    let (mut programs, mut hoisted, mut kernels) = (0, 0, 0);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        if !text.contains("#[pld::program]") {
            continue;
        }
        // Programs with mistakes on purpose (compile-fail cases) have nothing to round-trip.
        let Ok(found) = pld_syntax::programs_in_file(&text) else { continue };
        for program in found {
            let printed = pld_syntax::print_program(&program);
            let reparsed = pld_syntax::programs_in_file(&printed)
                .unwrap_or_else(|e| panic!("{}: printed program does not parse: {e}\n{printed}", file.display()));
            assert_eq!(reparsed.len(), 1);
            assert_eq!(
                reparsed[0],
                program,
                "{}: `{}` changed in the round trip:\n{printed}",
                file.display(),
                program.ident
            );
            assert_eq!(pld_syntax::print_program(&reparsed[0]), printed, "printing is stable");
            for host in program.hosts() {
                for signal in &host.hoisted {
                    let binding = format!("let {} = signal!();", signal.name);
                    assert!(printed.contains(&binding), "{}: {binding} missing from\n{printed}", file.display());
                    hoisted += 1;
                }
            }
            kernels += program.kernels().count();
            programs += 1;
        }
    }
    // The repository's programs: make sure the walk found them.
    eprintln!("{programs} programs, {hoisted} hoisted signals, {kernels} kernels round-tripped");
    assert!(programs >= 15, "only {programs} programs found");
    assert!(hoisted >= 40, "only {hoisted} hoisted signals found");
    assert!(kernels >= 5, "only {kernels} kernels found");
}
