//! Every path into the `pld` crate that generated code names, in one place: renaming or moving
//! a runtime item changes one line here. Paths are absolute (`::pld::...`) so a user's own
//! items of the same names never shadow them.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::quote;
use syn::Ident;

use pld_model::DType;

/// `::pld::Host<'_>`, the host scope every host function receives.
pub(crate) fn host() -> TokenStream {
    quote!(::pld::Host<'_>)
}

/// `::pld::World`.
pub(crate) fn world() -> TokenStream {
    quote!(::pld::World)
}

/// `::pld::Result<T>`.
pub(crate) fn result(t: TokenStream) -> TokenStream {
    quote!(::pld::Result<#t>)
}

/// `::pld::Error`.
pub(crate) fn error() -> TokenStream {
    quote!(::pld::Error)
}

/// `::pld::Window<'_, T>`.
pub(crate) fn window(t: TokenStream) -> TokenStream {
    quote!(::pld::Window<'_, #t>)
}

/// The private module of helpers only generated code calls.
pub(crate) fn dsl() -> TokenStream {
    quote!(::pld::__private::dsl)
}

/// A public item of the crate root by name: the option builders (`AllReduce`, `Opts`, ...) and
/// the enums they take (`ReduceOp`, `AllReduceMode`).
pub(crate) fn root(name: &str) -> TokenStream {
    let name = Ident::new(name, Span::call_site());
    quote!(::pld::#name)
}

/// The Rust type of an element type: a primitive, or pld's re-export of the `half` types.
pub(crate) fn elem(dtype: DType) -> TokenStream {
    match dtype {
        DType::F16 => quote!(::pld::f16),
        DType::BF16 => quote!(::pld::bf16),
        DType::F8E4M3 => quote!(::pld::f8e4m3),
        DType::F8E5M2 => quote!(::pld::f8e5m2),
        other => {
            let ident = Ident::new(other.name(), Span::call_site());
            quote!(#ident)
        }
    }
}

/// `tokens` with every token at `span`: a path interpolated into `quote_spanned!` keeps the
/// spans it was made with, so a path that rustc may name in a diagnostic (a trait bound of
/// `dsl::window`, say) is moved onto the user's token first.
pub(crate) fn at(span: Span, tokens: TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(group) => {
                let mut inner = Group::new(group.delimiter(), at(span, group.stream()));
                inner.set_span(span);
                TokenTree::Group(inner)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}
