//! The canonical form is independent of layout, so a program that is printed and parsed again is
//! equal to itself. The printer (prettyplease) decides some punctuation by itself: it adds
//! trailing commas to lists it wraps and drops them from lists it keeps on one line, and it
//! drops empty statements and the semicolon after a statement that can only be `()` (`for`,
//! `while`, an `if` without a final `else`), it trims the spaces ending a doc comment's lines,
//! and it decides the spacing of punctuation inside macro arguments. Parsing drops the same,
//! wherever it carries no meaning.

use proc_macro2::{Group, Punct, Spacing, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::visit_mut::{self, VisitMut};

/// Drops what printing does not keep (see the module docs), so printed and parsed again is equal.
pub(crate) struct NormalizeSpelling;

fn drop_trailing<T, P>(list: &mut Punctuated<T, P>) {
    if list.trailing_punct() {
        list.pop_punct();
    }
}

/// Whether `expr` is a statement prettyplease prints without its semicolon: one whose value can
/// only be `()`.
fn unit_block(expr: &syn::Expr) -> bool {
    fn if_without_final_else(expr: &syn::ExprIf) -> bool {
        match &expr.else_branch {
            None => true,
            Some((_, next)) => matches!(&**next, syn::Expr::If(next) if if_without_final_else(next)),
        }
    }
    match expr {
        syn::Expr::ForLoop(_) | syn::Expr::While(_) => true,
        syn::Expr::If(expr) => if_without_final_else(expr),
        _ => false,
    }
}

/// A doc string as prettyplease prints it: trailing spaces trimmed from every line but the last
/// of a multi-line one (which it prints before `*/`).
fn canonical_doc(doc: &str) -> String {
    match doc.rsplit_once('\n') {
        None => doc.trim_end_matches(' ').to_owned(),
        Some((head, last)) => {
            let head: Vec<&str> = head.split('\n').map(|l| l.trim_end_matches(' ')).collect();
            format!("{}\n{last}", head.join("\n"))
        }
    }
}

/// Pairs of punctuation that begin a multi-character operator: the only places where a `Joint`
/// spacing means something (`<=` is one token to `macro_rules!`, `< =` two).
const OPERATOR_PAIRS: [&str; 22] = [
    "::", "->", "=>", "==", "!=", "<=", ">=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "<<", ">>",
    "..", ".=", "<-",
];

/// Macro arguments with layout-independent spacing: a punctuation mark is `Joint` only when it
/// was and it begins an operator with the next one (a lifetime's quote keeps its spacing).
fn canonical_spacing(tokens: TokenStream) -> TokenStream {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(tokens.len());
    for (i, token) in tokens.iter().enumerate() {
        out.push(match token {
            TokenTree::Punct(p) if p.as_char() != '\'' && p.spacing() == Spacing::Joint => {
                let operator = match tokens.get(i + 1) {
                    Some(TokenTree::Punct(next)) => {
                        OPERATOR_PAIRS.contains(&format!("{}{}", p.as_char(), next.as_char()).as_str())
                    }
                    _ => false,
                };
                let mut canonical = Punct::new(p.as_char(), if operator { Spacing::Joint } else { Spacing::Alone });
                canonical.set_span(p.span());
                TokenTree::Punct(canonical)
            }
            TokenTree::Group(g) => {
                let mut canonical = Group::new(g.delimiter(), canonical_spacing(g.stream()));
                canonical.set_span(g.span());
                TokenTree::Group(canonical)
            }
            other => other.clone(),
        });
    }
    out.into_iter().collect()
}

impl VisitMut for NormalizeSpelling {
    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        mac.tokens = canonical_spacing(std::mem::take(&mut mac.tokens));
        visit_mut::visit_macro_mut(self, mac);
    }

    fn visit_attribute_mut(&mut self, attr: &mut syn::Attribute) {
        if let syn::Meta::NameValue(doc) = &mut attr.meta
            && doc.path.is_ident("doc")
            && let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(text), .. }) = &mut doc.value
        {
            let canonical = canonical_doc(&text.value());
            if canonical != text.value() {
                *text = syn::LitStr::new(&canonical, text.span());
            }
        }
        visit_mut::visit_attribute_mut(self, attr);
    }

    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        block.stmts.retain(|stmt| !matches!(stmt, syn::Stmt::Expr(syn::Expr::Verbatim(t), Some(_)) if t.is_empty()));
        for stmt in &mut block.stmts {
            if let syn::Stmt::Expr(expr, semi) = stmt
                && unit_block(expr)
            {
                *semi = None;
            }
        }
        visit_mut::visit_block_mut(self, block);
    }

    fn visit_signature_mut(&mut self, sig: &mut syn::Signature) {
        drop_trailing(&mut sig.inputs);
        visit_mut::visit_signature_mut(self, sig);
    }

    fn visit_expr_call_mut(&mut self, call: &mut syn::ExprCall) {
        drop_trailing(&mut call.args);
        visit_mut::visit_expr_call_mut(self, call);
    }

    fn visit_expr_method_call_mut(&mut self, call: &mut syn::ExprMethodCall) {
        drop_trailing(&mut call.args);
        visit_mut::visit_expr_method_call_mut(self, call);
    }

    fn visit_expr_array_mut(&mut self, array: &mut syn::ExprArray) {
        drop_trailing(&mut array.elems);
        visit_mut::visit_expr_array_mut(self, array);
    }

    fn visit_expr_tuple_mut(&mut self, tuple: &mut syn::ExprTuple) {
        if tuple.elems.len() > 1 {
            drop_trailing(&mut tuple.elems); // `(x,)` keeps its comma: it makes the tuple
        }
        visit_mut::visit_expr_tuple_mut(self, tuple);
    }

    fn visit_expr_struct_mut(&mut self, expr: &mut syn::ExprStruct) {
        if expr.rest.is_none() {
            drop_trailing(&mut expr.fields);
        }
        visit_mut::visit_expr_struct_mut(self, expr);
    }

    fn visit_type_tuple_mut(&mut self, tuple: &mut syn::TypeTuple) {
        if tuple.elems.len() > 1 {
            drop_trailing(&mut tuple.elems);
        }
        visit_mut::visit_type_tuple_mut(self, tuple);
    }

    fn visit_pat_tuple_mut(&mut self, tuple: &mut syn::PatTuple) {
        if tuple.elems.len() > 1 {
            drop_trailing(&mut tuple.elems);
        }
        visit_mut::visit_pat_tuple_mut(self, tuple);
    }

    fn visit_expr_closure_mut(&mut self, closure: &mut syn::ExprClosure) {
        drop_trailing(&mut closure.inputs);
        visit_mut::visit_expr_closure_mut(self, closure);
    }

    fn visit_angle_bracketed_generic_arguments_mut(&mut self, args: &mut syn::AngleBracketedGenericArguments) {
        drop_trailing(&mut args.args);
        visit_mut::visit_angle_bracketed_generic_arguments_mut(self, args);
    }

    fn visit_parenthesized_generic_arguments_mut(&mut self, args: &mut syn::ParenthesizedGenericArguments) {
        drop_trailing(&mut args.inputs);
        visit_mut::visit_parenthesized_generic_arguments_mut(self, args);
    }

    fn visit_generics_mut(&mut self, generics: &mut syn::Generics) {
        drop_trailing(&mut generics.params);
        if let Some(clause) = &mut generics.where_clause {
            drop_trailing(&mut clause.predicates);
        }
        visit_mut::visit_generics_mut(self, generics);
    }

    fn visit_pat_tuple_struct_mut(&mut self, pat: &mut syn::PatTupleStruct) {
        drop_trailing(&mut pat.elems);
        visit_mut::visit_pat_tuple_struct_mut(self, pat);
    }

    fn visit_pat_slice_mut(&mut self, pat: &mut syn::PatSlice) {
        drop_trailing(&mut pat.elems);
        visit_mut::visit_pat_slice_mut(self, pat);
    }

    fn visit_pat_struct_mut(&mut self, pat: &mut syn::PatStruct) {
        if pat.rest.is_none() {
            drop_trailing(&mut pat.fields);
        }
        visit_mut::visit_pat_struct_mut(self, pat);
    }

    fn visit_fields_named_mut(&mut self, fields: &mut syn::FieldsNamed) {
        drop_trailing(&mut fields.named);
        visit_mut::visit_fields_named_mut(self, fields);
    }

    fn visit_fields_unnamed_mut(&mut self, fields: &mut syn::FieldsUnnamed) {
        drop_trailing(&mut fields.unnamed);
        visit_mut::visit_fields_unnamed_mut(self, fields);
    }

    fn visit_item_enum_mut(&mut self, item: &mut syn::ItemEnum) {
        drop_trailing(&mut item.variants);
        visit_mut::visit_item_enum_mut(self, item);
    }

    fn visit_use_group_mut(&mut self, group: &mut syn::UseGroup) {
        drop_trailing(&mut group.items);
        visit_mut::visit_use_group_mut(self, group);
    }

    fn visit_type_fn_ptr_mut(&mut self, ty: &mut syn::TypeFnPtr) {
        if ty.variadic.is_none() {
            drop_trailing(&mut ty.inputs);
        }
        visit_mut::visit_type_fn_ptr_mut(self, ty);
    }
}
