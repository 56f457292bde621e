//! The command line: its arguments (made from the settings catalog), and one module per command
//! other than `run` (which is `crate::daemon`).

pub mod args;
pub mod doctor;
pub mod generate;
pub mod history;
pub mod once;
pub mod status;

use std::io::Write;

/// Writes `bytes` to standard output; a reader that went away early (`| head`) ends the output
/// quietly, as it does for any Unix tool, and is not an error.
pub fn print(bytes: &[u8]) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
