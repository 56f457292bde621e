//! What macOS reads of a 64-bit Mach-O executable before it runs it: the header and the load
//! commands (`<mach-o/loader.h>`), enough to check a binary that cannot run here.

pub struct MachO {
    pub cpu: u32,
    pub file_type: u32,
    /// `LC_BUILD_VERSION`'s platform (1 is macOS) and minimum OS (`0xXXXXYYZZ`).
    pub platform: Option<u32>,
    pub min_os: Option<u32>,
    /// The install names of the libraries it loads.
    pub libraries: Vec<String>,
    pub signed: bool,
}

const MAGIC_64: u32 = 0xfeed_facf;
const LC_LOAD_DYLIB: u32 = 0xc;
const LC_LOAD_WEAK_DYLIB: u32 = 0x8000_0018;
const LC_CODE_SIGNATURE: u32 = 0x1d;
const LC_BUILD_VERSION: u32 = 0x32;

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// Reads `bytes` as a little-endian 64-bit Mach-O file; panics on anything else.
pub fn read(bytes: &[u8]) -> MachO {
    assert_eq!(u32_at(bytes, 0), MAGIC_64, "not a 64-bit Mach-O file");
    let mut macho = MachO {
        cpu: u32_at(bytes, 4),
        file_type: u32_at(bytes, 12),
        platform: None,
        min_os: None,
        libraries: Vec::new(),
        signed: false,
    };
    let count = u32_at(bytes, 16);
    let mut at = 32;
    for _ in 0..count {
        let (cmd, size) = (u32_at(bytes, at), u32_at(bytes, at + 4) as usize);
        match cmd {
            LC_LOAD_DYLIB | LC_LOAD_WEAK_DYLIB => {
                let name = &bytes[at + u32_at(bytes, at + 8) as usize..at + size];
                let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                macho
                    .libraries
                    .push(String::from_utf8_lossy(&name[..end]).into_owned());
            }
            LC_BUILD_VERSION => {
                macho.platform = Some(u32_at(bytes, at + 8));
                macho.min_os = Some(u32_at(bytes, at + 12));
            }
            LC_CODE_SIGNATURE => macho.signed = true,
            _ => {}
        }
        at += size;
    }
    macho
}
