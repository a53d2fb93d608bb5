use std::fmt::Write;

use pld_model::AbiLayout;

/// The C header every kernel is written against.
pub const HEADER: &str = include_str!("../c/pld_device.h");

/// The name the generated sources include the header by.
pub const HEADER_NAME: &str = "pld_device.h";

/// C definitions of the functions the runtime calls around kernels, written before the kernels
/// (so nothing a kernel's source defines can change them): `pld_end_call`, the look for sleeping
/// readers a kernel's LL posts left due (`pld_wakes_flush`), run by the runtime after a kernel
/// only when `wakes_due` is set. Every kernel, builtin, generated or written by hand, is covered
/// whichever way it returns, and a call that posted nothing (one rank) pays nothing for it.
pub(crate) fn runtime_definitions() -> &'static str {
    "void pld_end_call(pld_ctx *c) { pld_wakes_flush(c); }\n\n"
}

/// C definitions that identify a device binary: its ABI version, content hash and struct layout,
/// read by the runtime before it runs anything from the binary.
pub(crate) fn identity_definitions(content_hash: &str) -> String {
    let mut c = String::new();
    c.push_str("const uint32_t pld_abi_version = PLD_ABI_VERSION;\n");
    let _ = writeln!(c, "const char pld_content_hash[] = \"{content_hash}\";");
    c.push_str("uint32_t pld_abi_layout(uint64_t *out, uint32_t cap) {\n    const uint64_t v[] = {\n");
    for (strukt, field) in AbiLayout::FIELDS {
        if field.is_empty() {
            let _ = writeln!(c, "        sizeof({strukt}),");
        } else {
            let _ = writeln!(c, "        offsetof({strukt}, {field}),");
        }
    }
    c.push_str(
        "    };\n    const uint32_t n = (uint32_t)(sizeof v / sizeof v[0]);\n    \
         for (uint32_t i = 0; i < n && i < cap; ++i) out[i] = v[i];\n    return n;\n}\n",
    );
    c
}
