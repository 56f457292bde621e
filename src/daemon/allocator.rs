//! glibc's allocator, tuned for a process that stays resident: `run` without the per-thread
//! caches of freed small blocks (the tcache). A backfill allocates and frees hundreds of
//! megabytes in blocks of every size; what each thread's cache holds at its end lies all over
//! the heap, out of reach of `malloc_trim`, and keeps the pages around it resident, and the
//! blocks freed there meanwhile were never merged with their neighbours. Without it an idle
//! `run` after a 1M-line backfill holds 12–13 MB instead of 15.5–16.5, after a 2M-line day 23
//! instead of 32, and the backfill takes as long (BENCHMARKS.md). glibc reads its tunables only
//! as a process starts, so `run` starts itself again with it, once, as the same process.

/// The tunables `run` starts with (glibc 2.26 and later; an older one has no tcache and ignores
/// them).
pub const TUNABLES: &str = "glibc.malloc.tcache_count=0";

/// Replaces this process with the same command, the same arguments and environment, and
/// [`TUNABLES`] (the same pid, so a service manager sees nothing). Unless `GLIBC_TUNABLES` is
/// already set: by that start, or by an operator, whose choice stands. Returns when nothing is
/// to be done, or the start fails (the binary gone from its path): `run` then goes on as it is.
/// Call it before anything else has happened: no file opened, no thread started.
pub fn start_tuned() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os("GLIBC_TUNABLES").is_some() {
            return;
        }
        let Ok(binary) = std::env::current_exe() else {
            return;
        };
        let mut args = std::env::args_os();
        let mut command = std::process::Command::new(binary);
        if let Some(name) = args.next() {
            command.arg0(name);
        }
        let _failed = command.args(args).env("GLIBC_TUNABLES", TUNABLES).exec();
    }
}
