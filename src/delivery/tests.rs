//! A delta export's outcome across kills and lost writes.

use std::path::Path;

use super::Delivery;
use crate::series::{AttrSet, Quantity, Sums, Totals};
use crate::store::{PendingExport, Store};

/// The store under `state_dir` and its delivery, as `once` (`defer`) or `run` opens them.
fn open(state_dir: &Path, once: bool) -> (Store, Delivery) {
    let mut store = Store::open(state_dir, false).unwrap();
    if once {
        store.defer_commit_flush();
    }
    let delivery = Delivery::open(&mut store, false).unwrap();
    (store, delivery)
}

fn export(delivery: &mut Delivery, lines: u64) {
    let mut delivered_after = Sums::default();
    let mut totals = Totals::default();
    totals.set(Quantity::Requests, lines);
    delivered_after.tokens.insert(AttrSet::folded(), totals);
    delivery.begin_export(PendingExport { delivered_after }).unwrap();
}

fn requests(sums: &Sums) -> u64 {
    sums.tokens[&AttrSet::folded()].get(Quantity::Requests)
}

#[test]
fn a_store_behind_its_export_record_takes_the_recorded_export_as_pending() {
    let dir = tempfile::tempdir().unwrap();
    let backup = tempfile::tempdir().unwrap();
    {
        let (_store, mut delivery) = open(dir.path(), false);
        export(&mut delivery, 1);
        delivery.finish_export().unwrap();
    }
    copy(&dir.path().join("store"), &backup.path().join("store"));
    {
        let (_store, mut delivery) = open(dir.path(), false);
        export(&mut delivery, 2);
        export(&mut delivery, 3);
    }
    // sled loses the last two exports; the record keeps the last one.
    std::fs::remove_dir_all(dir.path().join("store")).unwrap();
    copy(&backup.path().join("store"), &dir.path().join("store"));
    let (store, mut delivery) = open(dir.path(), false);
    assert_eq!(delivery.exports(), 3);
    let pending = delivery.pending_export().expect("the recorded export is pending");
    assert_eq!(requests(&pending.delivered_after), 3);
    delivery.finish_export().unwrap();
    assert_eq!(requests(delivery.delivered()), 3);
    drop((delivery, store));
    let (_store, delivery) = open(dir.path(), false);
    assert_eq!((delivery.exports(), delivery.pending_export()), (3, None));
}

/// What a `kill -9` leaves of a store still open: its files as the kernel has them.
fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

#[test]
fn in_once_an_export_outcome_lost_to_a_kill_leaves_the_export_pending_and_exact() {
    for once in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let killed = tempfile::tempdir().unwrap();
        let (store, mut delivery) = open(dir.path(), once);
        export(&mut delivery, 1);
        delivery.finish_export().unwrap();
        copy(dir.path(), killed.path());
        drop((delivery, store));

        let (_store, mut delivery) = open(killed.path(), false);
        assert_eq!(delivery.exports(), 1);
        if once {
            // The answer's write waited for the close's flush, which the kill prevented.
            let pending = delivery.pending_export().expect("the export is still pending");
            assert_eq!(requests(&pending.delivered_after), 1);
            delivery.finish_export().unwrap();
        } else {
            assert!(delivery.pending_export().is_none(), "`run` flushes it at once");
        }
        assert_eq!(requests(delivery.delivered()), 1);
    }
}

#[test]
fn in_once_a_refused_export_is_forgotten_ere_a_kill_can_lose_that() {
    // Left pending, a refused delta export would count as delivered on the next run.
    let dir = tempfile::tempdir().unwrap();
    let killed = tempfile::tempdir().unwrap();
    let (store, mut delivery) = open(dir.path(), true);
    export(&mut delivery, 1);
    delivery.abandon_export().unwrap();
    copy(dir.path(), killed.path());
    drop((delivery, store));
    let (_store, delivery) = open(killed.path(), false);
    assert!(delivery.pending_export().is_none());
}

#[test]
fn a_store_opened_again_under_its_delivery_keeps_what_was_delivered_and_what_is_pending() {
    let dir = tempfile::tempdir().unwrap();
    let (store, mut delivery) = open(dir.path(), false);
    // Named at start, not recorded until the stream's next publication.
    assert_eq!(
        delivery.identity(|| "fresh@host".into(), "legacy@host"),
        "fresh@host"
    );
    export(&mut delivery, 4);
    delivery.finish_export().unwrap();
    export(&mut delivery, 9);
    let (store, mut delivery) = match delivery.reopen(store) {
        Ok(reopened) => reopened,
        Err(failed) => panic!("{}", failed.0),
    };
    assert_eq!(delivery.exports(), 2);
    assert_eq!(requests(delivery.delivered()), 4);
    let pending = delivery
        .pending_export()
        .expect("the export in flight is still pending");
    assert_eq!(requests(&pending.delivered_after), 9);
    assert_eq!(
        delivery.identity(|| "another@host".into(), "legacy@host"),
        "fresh@host"
    );
    // The state lock stayed with the store throughout.
    assert!(matches!(
        Store::open(dir.path(), false),
        Err(crate::store::StoreError::Locked { .. })
    ));
    drop((delivery, store));
}
