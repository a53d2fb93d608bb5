//! Printing canonical DSL forms back as pld source.

use proc_macro2::TokenStream;
use quote::quote;

use crate::call::{CollectiveCall, NRanks};

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
