//! `#[pld::program]` modules: parsing into a [`Program`].

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Ident, Item, ItemMod, Visibility};

use crate::dsl::is_attr;
use crate::errors::Errors;
use crate::host::{AutoNames, HostFn, parse_host_fn};
use crate::kernel::{KernelIr, Param, check_kernel, check_signature, kernels_hash};

/// A `#[pld::program]` module in canonical form.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The module's attributes, `#[pld::program]` removed.
    pub attrs: Vec<Attribute>,
    /// The module's visibility.
    pub vis: Visibility,
    /// The module's name.
    pub ident: Ident,
    /// Its items in order.
    pub items: Vec<ProgramItem>,
}

/// A `#[pld::kernel]` function.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelFn {
    /// The function as written, `#[pld::kernel]` removed.
    pub func: syn::ItemFn,
    /// Its parameters, when the signature is valid (launches are generated from them).
    pub params: Option<Vec<Param>>,
    /// The checked kernel, when it is valid.
    pub ir: Option<KernelIr>,
}

impl KernelFn {
    /// The kernel's name.
    pub fn name(&self) -> String {
        self.func.sig.ident.to_string()
    }
}

/// One item of a program.
#[derive(Clone, Debug, PartialEq)]
pub enum ProgramItem {
    /// A `#[pld::host]` function.
    Host(HostFn),
    /// A `#[pld::kernel]` function.
    Kernel(KernelFn),
    /// Anything else (constants, `use`s, helper functions), kept as written.
    Item(Item),
}

impl Program {
    /// The host functions, in order.
    pub fn hosts(&self) -> impl Iterator<Item = &HostFn> {
        self.items.iter().filter_map(|item| match item {
            ProgramItem::Host(host) => Some(host),
            _ => None,
        })
    }

    /// The kernels, in order.
    pub fn kernels(&self) -> impl Iterator<Item = &KernelFn> {
        self.items.iter().filter_map(|item| match item {
            ProgramItem::Kernel(kernel) => Some(kernel),
            _ => None,
        })
    }

    /// The hash of the program's kernels (see [`kernels_hash`]).
    pub fn kernels_hash(&self) -> String {
        kernels_hash(self.kernels().filter_map(|k| k.ir.as_ref()))
    }
}

/// A parsed program and the mistakes found in it. Each mistake is also embedded, as a
/// `compile_error!`, in place of the construct it concerns, so expanding the program reports
/// every mistake exactly once and nothing else.
pub struct Parsed {
    /// The program.
    pub program: Program,
    /// Every mistake, combined; `None` when there is none.
    pub errors: Option<syn::Error>,
}

/// Parses `#[pld::program(<attr>)] <item>`. Fails only when `item` is not an inline module.
pub fn parse_program(attr: TokenStream, item: TokenStream) -> syn::Result<Parsed> {
    let mut errors = Errors::default();
    let mut items = Vec::new();
    if !attr.is_empty() {
        let error = syn::Error::new_spanned(&attr, "#[pld::program] takes no arguments");
        items.push(ProgramItem::Item(Item::Verbatim(error.to_compile_error())));
        errors.push(error);
    }
    let (module, mut content) = inline_module(item)?;
    for item in &mut content {
        syn::visit_mut::VisitMut::visit_item_mut(&mut crate::normalize::NormalizeSpelling, item);
    }
    let mut content: Vec<Option<Item>> = content.into_iter().map(Some).collect();
    // Kernels first: host code launches them, so their signatures must be known.
    let kernels = take_kernels(&mut content, &mut items, &mut errors);
    let signatures: Vec<(String, Option<Vec<Param>>)> = kernels.iter().map(|k| (k.name(), k.params.clone())).collect();
    items.extend(kernels.into_iter().map(ProgramItem::Kernel));
    let mut names = AutoNames::default();
    for item in content.into_iter().flatten() {
        match item {
            Item::Fn(func) if func.attrs.iter().any(|a| is_attr(a, "host")) => {
                match parse_host_fn(func, &signatures, &mut names, &mut errors) {
                    Ok(host) => items.push(ProgramItem::Host(host)),
                    Err(error) => {
                        // The function is dropped, so its error stands in its place.
                        items.push(ProgramItem::Item(Item::Verbatim(error.to_compile_error())));
                        errors.push(error);
                    }
                }
            }
            other => items.push(ProgramItem::Item(other)),
        }
    }
    let mut attrs: Vec<Attribute> = module.attrs.into_iter().filter(|a| !is_attr(a, "program")).collect();
    for attr in &mut attrs {
        syn::visit_mut::VisitMut::visit_attribute_mut(&mut crate::normalize::NormalizeSpelling, attr);
    }
    Ok(Parsed {
        program: Program { attrs, vis: module.vis, ident: module.ident, items },
        errors: errors.finish().err(),
    })
}

/// The module `#[pld::program]` is on, and its items; anything but an inline module is an error.
fn inline_module(item: TokenStream) -> syn::Result<(ItemMod, Vec<Item>)> {
    let mut module: ItemMod = match syn::parse2::<Item>(item)? {
        Item::Mod(module) => module,
        other => {
            return Err(syn::Error::new_spanned(
                other,
                "#[pld::program] goes on a module: `#[pld::program] mod name { ... }`",
            ));
        }
    };
    match module.content.take() {
        Some((_, content)) => Ok((module, content)),
        None => Err(syn::Error::new_spanned(
            module.semi.map(|s| quote!(#s)).unwrap_or_default(),
            "#[pld::program] needs an inline module: `mod name { ... }`",
        )),
    }
}

/// Takes every `#[pld::kernel]` function out of `content`, checked; a kernel that does not
/// check leaves its error among `items` (its signature, when valid, still types `launch!`).
fn take_kernels(content: &mut [Option<Item>], items: &mut Vec<ProgramItem>, errors: &mut Errors) -> Vec<KernelFn> {
    let mut kernels = Vec::new();
    for slot in content {
        if let Some(Item::Fn(func)) = slot
            && func.attrs.iter().any(|a| is_attr(a, "kernel"))
        {
            let Some(Item::Fn(mut func)) = slot.take() else { unreachable!() };
            func.attrs.retain(|a| !is_attr(a, "kernel"));
            let params = check_signature(&func.sig).ok();
            let ir = match check_kernel(&func) {
                Ok(ir) => Some(ir),
                Err(error) => {
                    items.push(ProgramItem::Item(Item::Verbatim(error.to_compile_error())));
                    errors.push(error);
                    None
                }
            };
            kernels.push(KernelFn { func, params, ir });
        }
    }
    kernels
}
