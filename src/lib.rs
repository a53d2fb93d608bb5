//! pld facade (in progress).
