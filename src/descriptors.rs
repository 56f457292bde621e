//! Whether an error says the descriptors ran out, in each platform's own codes: errno's on Unix,
//! Windows' own there (errno's numbers are other errors on Windows: 24 is a bad length).

/// Whether `error` says this process, or the whole system, has no file descriptors left (on
/// Windows: no file handles, or no sockets): a condition that passes once some are closed.
pub fn out_of_descriptors(error: &std::io::Error) -> bool {
    #[cfg(unix)]
    let out = matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
    #[cfg(windows)]
    let out = {
        use windows_sys::Win32::{Foundation::ERROR_TOO_MANY_OPEN_FILES, Networking::WinSock::WSAEMFILE};
        const TOO_MANY_FILES: i32 = ERROR_TOO_MANY_OPEN_FILES as i32;
        matches!(error.raw_os_error(), Some(TOO_MANY_FILES | WSAEMFILE))
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Error;

    #[test]
    #[cfg(unix)]
    fn errno_says_it_on_unix() {
        assert!(out_of_descriptors(&Error::from_raw_os_error(libc::EMFILE)));
        assert!(out_of_descriptors(&Error::from_raw_os_error(libc::ENFILE)));
        assert!(!out_of_descriptors(&Error::from_raw_os_error(libc::ENOSPC)));
    }

    #[test]
    #[cfg(windows)]
    fn windows_says_it_in_its_own_codes() {
        assert!(
            out_of_descriptors(&Error::from_raw_os_error(4)),
            "ERROR_TOO_MANY_OPEN_FILES"
        );
        assert!(out_of_descriptors(&Error::from_raw_os_error(10024)), "WSAEMFILE");
        assert!(
            !out_of_descriptors(&Error::from_raw_os_error(24)),
            "ERROR_BAD_LENGTH, errno's EMFILE"
        );
        assert!(
            !out_of_descriptors(&Error::from_raw_os_error(23)),
            "ERROR_CRC, errno's ENFILE"
        );
    }

    #[test]
    fn an_error_without_a_code_is_not_it() {
        assert!(!out_of_descriptors(&Error::other("too many open files")));
    }
}
