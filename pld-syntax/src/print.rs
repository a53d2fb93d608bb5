//! Printing canonical DSL forms back as pld source.

use proc_macro2::TokenStream;
use quote::quote;

use crate::call::{CollectiveCall, NRanks};
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

/// The argument tokens of a collective call in canonical order: windows, then `op`, `mode`,
/// `nranks`, `root`, `signal` (barrier's signal is positional).
pub(crate) fn call_tokens(call: &CollectiveCall) -> TokenStream {
    let contract = call.collective.contract();
    let mut args: Vec<TokenStream> = call.windows.iter().map(|w| quote!(#w)).collect();
    if let Some(op) = call.op {
        let op = syn::Ident::new(op.name(), proc_macro2::Span::call_site());
        args.push(quote!(op = #op));
    }
    if let Some(mode) = call.mode {
        let mode = syn::Ident::new(mode.name(), proc_macro2::Span::call_site());
        args.push(quote!(mode = #mode));
    }
    match &call.nranks {
        Some(NRanks::Literal(n)) => {
            let n = proc_macro2::Literal::u64_unsuffixed(*n);
            args.push(quote!(nranks = #n));
        }
        Some(NRanks::Const(path)) => args.push(quote!(nranks = #path)),
        None => {}
    }
    if let Some(root) = &call.root {
        args.push(quote!(root = #root));
    }
    match &call.signal {
        Some(signal) if contract.positional_signal => args.push(quote!(#signal)),
        Some(signal) => args.push(quote!(signal = #signal)),
        None => {}
    }
    quote!(#(#args),*)
}
