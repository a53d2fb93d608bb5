//! Printing canonical DSL forms back as pld source.

use quote::quote;

use crate::host::HostFn;
use crate::program::{Program, ProgramItem};

/// A program as pld source: the canonical form, with every generated signal a named binding
/// hoisted at the start of its host function (`let __auto_all_reduce_0 = signal!();`). Parsing
/// the text gives back an equal [`Program`].
pub fn print_program(program: &Program) -> String {
    let Program { attrs, vis, ident, items } = program;
    let items = items.iter().map(|item| match item {
        ProgramItem::Item(item) => quote!(#item),
        ProgramItem::Host(HostFn { attrs, vis, sig, hoisted, body }) => {
            let stmts = &body.stmts;
            quote!(#(#attrs)* #[pld::host] #vis #sig { #(#hoisted)* #(#stmts)* })
        }
        ProgramItem::Kernel(kernel) => {
            let syn::ItemFn { attrs, vis, sig, block, .. } = &kernel.func;
            quote!(#(#attrs)* #[pld::kernel] #vis #sig #block)
        }
    });
    let tokens = quote!(#(#attrs)* #[pld::program] #vis mod #ident { #(#items)* });
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(_) => tokens.to_string(),
    }
}
