//! glibc's allocator, tuned for a process that stays resident: `run` without the per-thread
//! caches of freed small blocks (the tcache). A backfill allocates and frees hundreds of
//! megabytes in blocks of every size; what each thread's cache holds at its end lies all over
//! the heap, out of reach of `malloc_trim`, and keeps the pages around it resident, and the
//! blocks freed there meanwhile were never merged with their neighbours. Without it an idle
//! `run` after a 1M-line backfill holds 12.9 MiB instead of 16.2, after a 2M-line day 22.9
//! instead of 29.7, and a backfill takes as long (BENCHMARKS.md). glibc reads its tunables only
//! as a process starts, so `run` starts itself again with it, once, as the same process.

/// The tunables `run` starts with (glibc 2.26 and later; an older one has no tcache and ignores
/// them).
pub const TUNABLES: &str = "glibc.malloc.tcache_count=0";

/// Replaces this process with the same command, the same arguments and environment, and
/// [`TUNABLES`] (the same pid, so a service manager sees nothing). Unless `GLIBC_TUNABLES` is
/// already set: by that start, or by an operator, whose choice stands (set empty, it turns this
/// off: for a debugger or an emulator that would not follow the second start). Nor when the
/// process was started other than as its own binary (through the dynamic loader, say: the same
/// arguments would not start it again), nor when glibc runs it in secure mode (setuid or file
/// capabilities, where the variable may not reach the second start). Returns when nothing is to
/// be done, or the start fails (the binary gone from its path): `run` then goes on as it is.
/// Call it before anything else has happened: no file opened, no thread started.
pub fn start_tuned() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: getauxval reads the process's auxiliary vector; it has no preconditions.
        let secure = unsafe { libc::getauxval(libc::AT_SECURE) } != 0;
        if secure || std::env::var_os("GLIBC_TUNABLES").is_some() {
            return;
        }
        let mut args = std::env::args_os();
        let (Ok(binary), Some(name)) = (std::env::current_exe(), args.next()) else {
            return;
        };
        if binary.file_name() != std::path::Path::new(&name).file_name() {
            return;
        }
        let mut command = std::process::Command::new(binary);
        command.arg0(name).args(args);
        let _failed = command.env("GLIBC_TUNABLES", TUNABLES).exec();
        // std set SIGPIPE back to its default for the new program; this one goes on, and a write
        // to a closed pipe must stay an error here, never the end of the process.
        // SAFETY: signal only sets this signal's disposition.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
    }
}
