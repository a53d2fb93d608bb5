//! The one front end of pld, shared by the procedural macros and (for kernels) the build-script
//! backend: parsing `#[pld::program]` modules into a canonical IR, validating every DSL macro
//! against the contract table of `pld-model`, and generating the Rust they expand into.
//!
//! Phases are separate (cubecl's model): [`parse_program`] builds a [`Program`] in canonical
//! form (every hidden signal made explicit and hoisted), [`expand_program`] generates code from
//! it. A mistake is reported on its own token, once, and the construct it concerns is replaced by
//! that error alone, so one mistake gives one error.

mod alloc;
mod call;
mod dsl;
mod errors;
mod expand;
mod host;
pub mod kernel;
mod launch;
mod normalize;
mod paths;
mod print;
mod program;
mod suggest;

use proc_macro2::TokenStream;
use quote::quote;

pub use call::{CollectiveCall, NRanks, parse_call};
pub use dsl::DslMacro;
pub use expand::expand_program;
pub use host::{Hoisted, HostFn};
pub use launch::{LaunchCall, parse_launch};
pub use print::print_program;
pub use program::{KernelFn, Parsed, Program, ProgramItem, parse_program};
pub use suggest::did_you_mean;

/// Every `#[pld::program]` module of a Rust source file, inline modules searched too. Fails with
/// every mistake found, combined.
pub fn programs_in_file(text: &str) -> syn::Result<Vec<Program>> {
    fn add(errors: &mut Option<syn::Error>, e: syn::Error) {
        match errors.as_mut() {
            Some(all) => all.combine(e),
            None => *errors = Some(e),
        }
    }
    fn collect(items: &[syn::Item], programs: &mut Vec<Program>, errors: &mut Option<syn::Error>) {
        for item in items {
            let syn::Item::Mod(module) = item else { continue };
            if module.attrs.iter().any(is_program_attr) {
                match parse_program(TokenStream::new(), quote::ToTokens::to_token_stream(module)) {
                    Ok(parsed) => {
                        if let Some(e) = parsed.errors {
                            add(errors, e);
                        }
                        programs.push(parsed.program);
                    }
                    Err(e) => add(errors, e),
                }
            } else if let Some((_, content)) = &module.content {
                collect(content, programs, errors);
            }
        }
    }
    let file = syn::parse_file(text)?;
    let (mut programs, mut errors) = (Vec::new(), None);
    collect(&file.items, &mut programs, &mut errors);
    errors.map_or(Ok(programs), Err)
}

/// Whether an attribute is `#[pld::program]` (or `#[program]` after `use pld::program`).
pub fn is_program_attr(attr: &syn::Attribute) -> bool {
    dsl::is_attr(attr, "program")
}

/// `#[pld::program]`: the whole pipeline, as the proc macro runs it. Never fails: mistakes come
/// out as `compile_error!`s where they were made.
pub fn program_macro(attr: TokenStream, item: TokenStream) -> TokenStream {
    match parse_program(attr, item.clone()) {
        Ok(parsed) => expand_program(&parsed.program, parsed.errors.is_none()),
        Err(error) => {
            let error = error.to_compile_error();
            quote!(#error #item)
        }
    }
}

/// `#[pld::host]` outside a program: an error, and the function without its body's DSL macros
/// (so nothing else is reported about it).
pub fn host_outside_program(item: TokenStream) -> TokenStream {
    let message = "#[pld::host] functions belong in a #[pld::program] module: put the function in \
                   `#[pld::program] mod name { ... }`";
    match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(func) => {
            let error = syn::Error::new_spanned(&func.sig.ident, message).to_compile_error();
            let syn::ItemFn { attrs, vis, sig, .. } = func;
            quote! {
                #error
                #(#attrs)* #[allow(unused_variables)] #vis #sig { ::core::unreachable!() }
            }
        }
        Err(_) => syn::Error::new(proc_macro2::Span::call_site(), message).to_compile_error(),
    }
}

/// `#[pld::kernel]` outside a program: an error, and nothing else.
pub fn kernel_outside_program(item: TokenStream) -> TokenStream {
    let message = "#[pld::kernel] functions belong in a #[pld::program] module, whose build script compiles them";
    let span = syn::parse2::<syn::ItemFn>(item).map_or(proc_macro2::Span::call_site(), |f| f.sig.ident.span());
    syn::Error::new(span, message).to_compile_error()
}

/// A DSL macro invoked outside a host function.
pub fn outside_host(name: &str) -> TokenStream {
    let method = match name {
        "stage_in" => "write",
        "stage_out" => "read_into",
        other => other,
    };
    let message = if name == "launch" {
        "`launch!` can only be used in a #[pld::host] function of a #[pld::program] module, whose kernels it launches"
            .to_owned()
    } else {
        format!(
            "`{name}!` can only be used in a #[pld::host] function of a #[pld::program] module; outside one, \
             call the runtime API on a `pld::Host` instead (`host.{method}(..)`)"
        )
    };
    quote!(::core::compile_error!(#message))
}
