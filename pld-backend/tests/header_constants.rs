//! The C header repeats a few constants and the LL layout that `pld-model` defines: compile the
//! header into a small program and check every one against the Rust definition.

use pld_model::{
    ABI_VERSION, LL_DEEP_SLOTS, LL_HEADER, LL_SLOTS, LL_TAKEN, LL_UNANSWERED, LlLayout, P2P_DEPTH_MAX, TILE_BYTES,
    p2p_area_bytes,
};

#[test]
fn every_constant_and_ll_offset_of_the_header_matches_pld_model() {
    let dir = std::env::temp_dir().join(format!("pld-header-constants-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(pld_backend::HEADER_NAME), pld_backend::HEADER).unwrap();
    let nranks = [1u64, 2, 3, 8, 1000];
    let mut program = String::from("#include <stdio.h>\n#include \"pld_device.h\"\nint main(void) {\n");
    program.push_str("    printf(\"%u %llu %llu\\n\", (unsigned)PLD_ABI_VERSION, (unsigned long long)PLD_TILE_BYTES, (unsigned long long)PLD_LL_HEADER);\n");
    let depths = [LL_SLOTS, LL_SLOTS * 2, LL_DEEP_SLOTS];
    for n in nranks {
        for slots in depths {
            program.push_str(&format!(
                "    printf(\"%llu\\n\", (unsigned long long)pld_ll_tables_bytes({n}, {slots}));\n"
            ));
        }
        for depth in [0, 1, 8] {
            program
                .push_str(&format!("    printf(\"%llu\\n\", (unsigned long long)pld_p2p_area_bytes({n}, {depth}));\n"));
        }
        // Sender n - 1's slot for call 11 and call 200, in a layout of 4 KiB slots.
        for slots in depths {
            for seq in [11, 200] {
                program.push_str(&format!(
                    "    {{ pld_ctx c = {{0}}; c.nranks = {n}; pld_coll_args a = {{0}}; a.ll_stride = 4160; \
                     a.ll_slots = {slots}; a.call.seq = {seq}; \
                     printf(\"%llu\\n\", (unsigned long long)pld_ll_slot_off(&c, &a, {})); }}\n",
                    n - 1
                ));
            }
        }
    }
    program.push_str("    printf(\"%llu\\n\", (unsigned long long)PLD_P2P_DEPTH_MAX);\n");
    program.push_str(
        "    printf(\"%llu %llu\\n\", (unsigned long long)PLD_LL_TAKEN, (unsigned long long)PLD_LL_UNANSWERED);\n",
    );
    program.push_str("    return 0;\n}\n");
    let source = dir.join("constants.c");
    std::fs::write(&source, program).unwrap();
    let exe = dir.join("constants");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = std::process::Command::new(cc).arg("-I").arg(&dir).arg("-o").arg(&exe).arg(&source).status().unwrap();
    assert!(status.success(), "compiling the header failed");
    let out = String::from_utf8(std::process::Command::new(&exe).output().unwrap().stdout).unwrap();
    let mut lines = out.lines();
    assert_eq!(lines.next().unwrap(), format!("{ABI_VERSION} {TILE_BYTES} {LL_HEADER}"));
    for n in nranks {
        for slots in depths {
            let layout = LlLayout { nranks: n, stride: 4160, slots };
            assert_eq!(lines.next().unwrap(), layout.tables_bytes().to_string(), "tables at {n} ranks, {slots} slots");
        }
        for depth in [0, 1, 8] {
            assert_eq!(
                lines.next().unwrap(),
                p2p_area_bytes(n as usize, depth).to_string(),
                "p2p area at {n} ranks, depth {depth}"
            );
        }
        for slots in depths {
            let layout = LlLayout { nranks: n, stride: 4160, slots };
            for seq in [11, 200] {
                let off = layout.slot_off(n - 1, seq).to_string();
                assert_eq!(lines.next().unwrap(), off, "slot of call {seq} at {n} ranks, {slots} slots");
            }
        }
    }
    assert_eq!(lines.next().unwrap(), P2P_DEPTH_MAX.to_string());
    assert_eq!(lines.next().unwrap(), format!("{LL_TAKEN} {LL_UNANSWERED}"));
    let _ = std::fs::remove_dir_all(&dir);
}
