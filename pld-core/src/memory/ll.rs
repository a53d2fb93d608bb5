//! Where the LL message area lies in this world's windows (its layout: `pld_model::LlLayout`).

use pld_model::LlLayout;

/// The LL message area of every window; `layout` `None`: no LL messages on this world.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LlArea {
    pub(crate) offset: usize,
    pub(crate) layout: Option<LlLayout>,
}

impl LlArea {
    /// Bytes of one inbox slot, as kernels receive it (0: no LL messages).
    pub(crate) fn stride(&self) -> usize {
        self.layout.map_or(0, |l| l.stride as usize)
    }

    /// Slots per sender in every inbox, as kernels receive it (0: no LL messages).
    pub(crate) fn slots(&self) -> u64 {
        self.layout.map_or(0, |l| l.slots)
    }

    /// Whether window offset `off` lies in the area.
    pub(crate) fn contains(&self, off: u64) -> bool {
        self.layout.is_some_and(|l| (self.offset as u64..self.offset as u64 + l.bytes()).contains(&off))
    }
}
