//! Replays the fuzz corpus (`fuzz/corpus/front_end`, grown by `cargo +nightly fuzz run
//! front_end`) through the front end on the stable compiler: every input that once found new
//! code paths stays a regression test. Rejections are fine; a panic fails the test (its message,
//! with the first differing item for a round trip, is printed above the failure): to replay a
//! crash, copy it from `fuzz/artifacts/` into the corpus.

use std::path::Path;

#[test]
fn every_corpus_input_is_rejected_or_accepted_without_a_panic() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/front_end");
    let mut inputs = 0;
    for entry in std::fs::read_dir(&corpus).unwrap_or_else(|e| panic!("{}: {e}", corpus.display())) {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let outcome = std::panic::catch_unwind(|| pld_backend::fuzzing::front_end(text));
            assert!(outcome.is_ok(), "{} makes the front end panic", path.display());
        }
        inputs += 1;
    }
    assert!(inputs >= 50, "the corpus holds only {inputs} inputs");
}
