//! The header's fp8 conversions must be the `float8` crate's bit for bit: the host computes
//! reference results and checks device results with that crate. Widening is checked for all
//! 256 bit patterns of both types, narrowing for a million f32 values spread over every
//! exponent plus, for every pair of neighbouring fp8 values, their midpoint and the f32 values
//! either side of it (where round-to-nearest-even decides), and the specials.

use float8::{F8E4M3, F8E5M2};

fn narrowing_inputs() -> Vec<f32> {
    let mut values: Vec<f32> = (0..=u32::MAX).step_by(4099).map(f32::from_bits).collect();
    for bits in 0..=255u8 {
        for (a, b) in [
            (F8E4M3::from_bits(bits).to_f32(), F8E4M3::from_bits(bits.wrapping_add(1)).to_f32()),
            (F8E5M2::from_bits(bits).to_f32(), F8E5M2::from_bits(bits.wrapping_add(1)).to_f32()),
        ] {
            let mid = ((a as f64 + b as f64) / 2.0) as f32;
            for m in [a, b, mid] {
                values.extend([
                    m,
                    f32::from_bits(m.to_bits().wrapping_add(1)),
                    f32::from_bits(m.to_bits().wrapping_sub(1)),
                ]);
            }
        }
    }
    values.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MAX,
        f32::MIN_POSITIVE,
        448.0,
        464.0,
        57344.0,
        61440.0,
    ]);
    values
}

#[test]
fn the_header_converts_fp8_as_the_float8_crate_does() {
    let dir = std::env::temp_dir().join(format!("pld-fp8-conversions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(pld_backend::HEADER_NAME), pld_backend::HEADER).unwrap();
    let inputs = narrowing_inputs();
    let raw: Vec<u8> = inputs.iter().flat_map(|f| f.to_bits().to_le_bytes()).collect();
    std::fs::write(dir.join("in.bin"), &raw).unwrap();
    let program = r#"#include <stdio.h>
#include <stdlib.h>
#include "pld_device.h"
int main(int argc, char **argv) {
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    for (int b = 0; b < 256; ++b) {
        float w[2] = {pld_f8e4m3_to_f32((uint8_t)b), pld_f8e5m2_to_f32((uint8_t)b)};
        fwrite(w, 4, 2, out);
    }
    float f;
    while (fread(&f, 4, 1, in) == 1) {
        uint8_t n[2] = {pld_f32_to_f8e4m3(f), pld_f32_to_f8e5m2(f)};
        fwrite(n, 1, 2, out);
    }
    fclose(out);
    return 0;
}
"#;
    let source = dir.join("fp8.c");
    std::fs::write(&source, program).unwrap();
    let exe = dir.join("fp8");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status =
        std::process::Command::new(cc).args(["-O1", "-I"]).arg(&dir).arg("-o").arg(&exe).arg(&source).status().unwrap();
    assert!(status.success(), "compiling the header failed");
    let status = std::process::Command::new(&exe).arg(dir.join("in.bin")).arg(dir.join("out.bin")).status().unwrap();
    assert!(status.success());
    let out = std::fs::read(dir.join("out.bin")).unwrap();
    assert_eq!(out.len(), 256 * 8 + inputs.len() * 2);
    let word = |i: usize| u32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
    for bits in 0..=255u8 {
        let (e4m3, e5m2) = (word(2 * bits as usize), word(2 * bits as usize + 1));
        let (want4, want5) = (F8E4M3::from_bits(bits).to_f32(), F8E5M2::from_bits(bits).to_f32());
        // NaN payloads aside (both are NaN), the bits must agree.
        let same = |got: u32, want: f32| got == want.to_bits() || (f32::from_bits(got).is_nan() && want.is_nan());
        assert!(same(e4m3, want4), "e4m3 {bits:#04x}: device {:?}, float8 {want4:?}", f32::from_bits(e4m3));
        assert!(same(e5m2, want5), "e5m2 {bits:#04x}: device {:?}, float8 {want5:?}", f32::from_bits(e5m2));
    }
    let narrowed = &out[256 * 8..];
    for (i, &f) in inputs.iter().enumerate() {
        let (e4m3, e5m2) = (narrowed[2 * i], narrowed[2 * i + 1]);
        assert_eq!(e4m3, F8E4M3::from_f32(f).to_bits(), "e4m3 of {f:e} ({:#010x})", f.to_bits());
        assert_eq!(e5m2, F8E5M2::from_f32(f).to_bits(), "e5m2 of {f:e} ({:#010x})", f.to_bits());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
