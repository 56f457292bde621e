//! The damage a record file's checksum and framing must catch (tests only).

/// Asserts that `reads` refuses every copy of `bytes` with one byte damaged, and every cut of it:
/// what a record file's checksum and framing must catch.
pub fn assert_every_damage_is_refused(bytes: &[u8], reads: impl Fn(&[u8]) -> bool) {
    for at in 0..bytes.len() {
        let mut damaged = bytes.to_vec();
        damaged[at] ^= 0x10;
        assert!(!reads(&damaged), "byte {at} damaged, still read");
    }
    for len in 0..bytes.len() {
        assert!(!reads(&bytes[..len]), "cut at {len}, still read");
    }
}
