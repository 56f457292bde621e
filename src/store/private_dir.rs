//! The state dir made its user's own: 0700 on Unix, an access list of the user alone on Windows.

use std::path::Path;

use super::StoreError;

/// The state dir is trusted as far as it is its user's own: one that others can write (a
/// planted file or link could take the place of any record) is made private again when it is
/// ours, with a note, and refused otherwise.
pub(super) fn private_state_dir(state_dir: &Path) -> Result<(), StoreError> {
    #[cfg(windows)]
    windows::only_its_user(state_dir).map_err(|e| StoreError::io(state_dir, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let meta = std::fs::metadata(state_dir).map_err(|e| StoreError::io(state_dir, e))?;
        if meta.mode() & 0o022 == 0 {
            return Ok(());
        }
        // A shared folder (sticky, like /tmp) is never changed: it is not the exporter's.
        // SAFETY: geteuid has no preconditions.
        if meta.uid() != unsafe { libc::geteuid() } || meta.mode() & 0o1000 != 0 {
            return Err(StoreError::NotPrivate {
                path: state_dir.to_path_buf(),
            });
        }
        std::fs::set_permissions(state_dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| StoreError::io(state_dir, e))?;
        crate::events::store::state_dir_made_private(state_dir, meta.mode() & 0o777);
    }
    Ok(())
}

/// Windows keeps no mode bits: a folder's access list decides. The state dir's is made the
/// user's alone (full control for the account the exporter runs as, inherited by everything
/// in it, and nothing inherited from the folder above, where `%LOCALAPPDATA%` may let others
/// in), on every open: a folder moved or copied in keeps the access list it had.
#[cfg(windows)]
mod windows {
    use std::io;
    use std::os::windows::ffi::OsStrExt;
    use std::path::Path;
    use std::ptr::null_mut;

    use windows_sys::Win32::Foundation::{CloseHandle, ERROR_SUCCESS, HANDLE};
    use windows_sys::Win32::Security::Authorization::{SE_FILE_OBJECT, SetNamedSecurityInfoW};
    use windows_sys::Win32::Security::{
        ACCESS_ALLOWED_ACE, ACL, ACL_REVISION, AddAccessAllowedAceEx, CONTAINER_INHERIT_ACE,
        DACL_SECURITY_INFORMATION, GetLengthSid, GetTokenInformation, InitializeAcl, OBJECT_INHERIT_ACE,
        PROTECTED_DACL_SECURITY_INFORMATION, TOKEN_QUERY, TOKEN_USER, TokenUser,
    };
    use windows_sys::Win32::Storage::FileSystem::FILE_ALL_ACCESS;
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

    pub fn only_its_user(dir: &Path) -> io::Result<()> {
        // SAFETY: every buffer handed to the API is sized as the API asked (the token's user,
        // the access list from the SID's length), aligned for what is read from it, and lives
        // until the calls that read it have returned; the token handle is closed on every path.
        unsafe {
            let mut token: HANDLE = null_mut();
            if OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) == 0 {
                return Err(io::Error::last_os_error());
            }
            let mut len = 0u32;
            GetTokenInformation(token, TokenUser, null_mut(), 0, &mut len);
            let mut user = vec![0u64; (len as usize).div_ceil(8)];
            let got = GetTokenInformation(token, TokenUser, user.as_mut_ptr().cast(), len, &mut len);
            let error = io::Error::last_os_error();
            CloseHandle(token);
            if got == 0 {
                return Err(error);
            }
            let sid = (*user.as_ptr().cast::<TOKEN_USER>()).User.Sid;
            let acl_len = size_of::<ACL>() + size_of::<ACCESS_ALLOWED_ACE>() + GetLengthSid(sid) as usize;
            let mut acl = vec![0u64; acl_len.div_ceil(8)];
            let acl = acl.as_mut_ptr().cast::<ACL>();
            if InitializeAcl(acl, acl_len as u32, ACL_REVISION) == 0
                || AddAccessAllowedAceEx(
                    acl,
                    ACL_REVISION,
                    OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE,
                    FILE_ALL_ACCESS,
                    sid,
                ) == 0
            {
                return Err(io::Error::last_os_error());
            }
            let wide: Vec<u16> = dir.as_os_str().encode_wide().chain(Some(0)).collect();
            let status = SetNamedSecurityInfoW(
                wide.as_ptr(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
                null_mut(),
                null_mut(),
                acl,
                null_mut(),
            );
            if status != ERROR_SUCCESS {
                return Err(io::Error::from_raw_os_error(status as i32));
            }
        }
        Ok(())
    }
}
