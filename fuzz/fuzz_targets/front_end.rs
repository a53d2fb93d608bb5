//! Arbitrary text through pld's whole front end: it may reject, never panic, and every program
//! it accepts must survive a print / parse round trip.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        pld_backend::fuzzing::front_end(text);
    }
});
