//! Link-time stubs of the macOS libraries the exporter calls, so that zig can link a macOS binary
//! on Linux without Apple's SDK (which may not be copied here).
//!
//! A stub (`.tbd`, Apple's text-based dylib format) names a library's install path and the
//! symbols it exports; the linker records each symbol against that library and macOS resolves it
//! at load time, as it does for a binary linked against the real SDK. The lists below are the
//! symbols the binary imports, each under the framework Apple's headers declare it in: when a
//! dependency starts to call another, the link fails naming it, and it is added here after
//! checking its framework. zig brings libSystem's own stub.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

const COREFOUNDATION: &[&str] = &[
    "_CFArrayAppendValue",
    "_CFArrayCreate",
    "_CFArrayCreateMutable",
    "_CFArrayGetCount",
    "_CFArrayGetValueAtIndex",
    "_CFArrayInsertValueAtIndex",
    "_CFDataCreate",
    "_CFDataGetBytePtr",
    "_CFDataGetLength",
    "_CFDateCreate",
    "_CFDictionaryGetValueIfPresent",
    "_CFEqual",
    "_CFErrorCopyDescription",
    "_CFErrorGetCode",
    "_CFNumberGetValue",
    "_CFRelease",
    "_CFRetain",
    "_CFRunLoopGetCurrent",
    "_CFRunLoopIsWaiting",
    "_CFRunLoopRun",
    "_CFRunLoopStop",
    "_CFStringCreateWithBytes",
    "_CFStringCreateWithBytesNoCopy",
    "_CFStringGetBytes",
    "_CFStringGetCStringPtr",
    "_CFStringGetLength",
    "_CFURLCopyAbsoluteURL",
    "_CFURLCopyFileSystemPath",
    "_CFURLCopyLastPathComponent",
    "_CFURLCreateCopyAppendingPathComponent",
    "_CFURLCreateCopyDeletingLastPathComponent",
    "_CFURLCreateFilePathURL",
    "_CFURLCreateFileReferenceURL",
    "_CFURLCreateFromFileSystemRepresentation",
    "_CFURLResourceIsReachable",
    "_kCFAbsoluteTimeIntervalSince1970",
    "_kCFAllocatorDefault",
    "_kCFAllocatorNull",
    "_kCFRunLoopDefaultMode",
    "_kCFTypeArrayCallBacks",
];

/// FSEvents (notify's watcher): CoreServices re-exports it, and binaries link CoreServices.
const CORESERVICES: &[&str] = &[
    "_FSEventStreamCreate",
    "_FSEventStreamGetDeviceBeingWatched",
    "_FSEventStreamInvalidate",
    "_FSEventStreamRelease",
    "_FSEventStreamScheduleWithRunLoop",
    "_FSEventStreamStart",
    "_FSEventStreamStop",
    "_FSEventsGetCurrentEventId",
    "_FSEventsPurgeEventsForDeviceUpToEventId",
];

/// The system's certificate store and trust evaluation (TLS to a collector).
const SECURITY: &[&str] = &[
    "_SecCertificateCopyData",
    "_SecCertificateCopySubjectSummary",
    "_SecCertificateCreateWithData",
    "_SecCopyErrorMessageString",
    "_SecPolicyCreateSSL",
    "_SecTrustCreateWithCertificates",
    "_SecTrustEvaluateWithError",
    "_SecTrustSetAnchorCertificates",
    "_SecTrustSetAnchorCertificatesOnly",
    "_SecTrustSetOCSPResponse",
    "_SecTrustSetVerifyDate",
    "_SecTrustSettingsCopyCertificates",
    "_SecTrustSettingsCopyTrustSettings",
];

/// Writes the stubs under `sdk` (as an SDK lays them out) and returns `sdk`. Rust's standard
/// library links libiconv without calling it: its stub exports nothing.
pub fn write(sdk: &Path) -> Result<PathBuf> {
    for (name, symbols) in [
        ("CoreFoundation", COREFOUNDATION),
        ("CoreServices", CORESERVICES),
        ("Security", SECURITY),
    ] {
        let install = format!("/System/Library/Frameworks/{name}.framework/Versions/A/{name}");
        let path = sdk.join(format!("System/Library/Frameworks/{name}.framework/{name}.tbd"));
        write_if_changed(&path, &stub(&install, symbols))?;
    }
    write_if_changed(
        &sdk.join("usr/lib/libiconv.tbd"),
        &stub("/usr/lib/libiconv.2.dylib", &[]),
    )?;
    Ok(sdk.to_path_buf())
}

fn stub(install_name: &str, symbols: &[&str]) -> String {
    let mut text = format!(
        "--- !tapi-tbd\ntbd-version: 4\ntargets: [ x86_64-macos, arm64-macos ]\n\
         install-name: '{install_name}'\n"
    );
    if !symbols.is_empty() {
        text.push_str("exports:\n  - targets: [ x86_64-macos, arm64-macos ]\n    symbols: [ ");
        text.push_str(&symbols.join(", "));
        text.push_str(" ]\n");
    }
    text.push_str("...\n");
    text
}

/// Leaves an unchanged stub's time alone, so cargo does not relink for nothing.
fn write_if_changed(path: &Path, text: &str) -> Result<()> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::create_dir_all(path.parent().unwrap())
        .with_context(|| format!("making {}", path.parent().unwrap().display()))?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
