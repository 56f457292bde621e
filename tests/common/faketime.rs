//! The exporter's wall clock moved (libfaketime, preloaded; Debian's `faketime`, which `.ci/run`
//! installs), the monotonic clock left real.

use std::path::{Path, PathBuf};
use std::process::Command;

/// libfaketime's preload library for threaded programs, when installed.
pub fn libfaketime() -> Option<PathBuf> {
    let dirs = std::fs::read_dir("/usr/lib").ok()?.flatten().map(|e| e.path());
    dirs.chain([PathBuf::from("/usr/lib")])
        .map(|dir| dir.join("faketime/libfaketimeMT.so.1"))
        .find(|lib| lib.exists())
}

/// `command` under libfaketime's `lib` with `FAKETIME=faked` (the monotonic clock left real).
pub fn with_faked_clock<'a>(command: &'a mut Command, lib: &Path, faked: &str) -> &'a mut Command {
    command
        .env("LD_PRELOAD", lib)
        .env("FAKETIME", faked)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
}
