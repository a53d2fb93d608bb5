//! An error collector in the style of serde_derive's `Ctxt`: every mistake found in one pass is
//! kept, each spanned on its own token, and they are reported together.

use std::fmt::Display;

use quote::ToTokens;

/// Collects errors; [`Errors::finish`] combines them into one `syn::Error`.
#[derive(Default)]
pub(crate) struct Errors {
    combined: Option<syn::Error>,
}

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.combined {
            Some(combined) => combined.combine(error),
            None => self.combined = Some(error),
        }
    }

    pub(crate) fn spanned(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub(crate) fn at(&mut self, span: proc_macro2::Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.combined.is_none()
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        self.combined.map_or(Ok(()), Err)
    }
}
