//! The embedded default launcher: every rank a thread of this process, its window an anonymous
//! mapping.

use std::sync::Arc;
use std::sync::atomic::AtomicI32;

use super::Fabric;
use crate::device::LOCAL_OPS;
use crate::memory::SymmetricHeap;

/// The fabric of `nranks` threads over `heap`.
pub(crate) fn fabric(nranks: usize, heap: SymmetricHeap) -> Fabric {
    let control: Box<[AtomicI32]> = (0..=nranks).map(|_| AtomicI32::new(0)).collect();
    Fabric {
        launcher: "local".to_owned(),
        nranks,
        local: 0..nranks,
        node_ranks: nranks,
        cores: crate::cpus::node_cpus(),
        heap: Arc::new(heap),
        control: control.as_ptr().cast::<i32>().cast_mut(),
        ops: &LOCAL_OPS,
        _keep: Box::new(control),
        on_failure: None,
        transport_only: false,
        node_of: vec![0; nranks],
        agree_on_allocation: None,
        lost_peer: None,
        network: None,
        clock: crate::trace::clock::ClockSync::now(),
        measure_clock: None,
    }
}
