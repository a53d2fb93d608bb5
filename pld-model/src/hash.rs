//! The content fingerprint every pld crate names binaries and kernels by, defined once.

/// FNV-1a, 64 bit, over `parts` with a separator byte after each: a stable content fingerprint
/// (stale-binary detection, not security), spelled `fnv1a64:<16 hex digits>`.
pub fn fnv1a64<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    format!("fnv1a64:{h:016x}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_value_and_separators_count() {
        // FNV-1a of "a" is af63dc4c8601ec8c; with the separator byte after it:
        let a = (0xaf63_dc4c_8601_ec8c_u64 ^ 0xff).wrapping_mul(0x0000_0100_0000_01b3);
        assert_eq!(super::fnv1a64([&b"a"[..]]), format!("fnv1a64:{a:016x}"));
        assert_ne!(super::fnv1a64([&b"ab"[..]]), super::fnv1a64([&b"a"[..], &b"b"[..]]));
    }
}
