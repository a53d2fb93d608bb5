//! Expansion snapshots: what each collective macro becomes, pretty-printed. The hoisted
//! `__auto_*` signals are visible and named, and a call site inside a loop allocates once (its
//! signal is bound before the loop). Update with `UPDATE_EXPECT=1 cargo test -p pld-syntax`.

use expect_test::{ExpectFile, expect_file};
use quote::quote;

fn check(program: proc_macro2::TokenStream, expected: ExpectFile) {
    let parsed = pld_syntax::parse_program(quote!(), program).expect("a module");
    assert!(parsed.errors.is_none(), "{:?}", parsed.errors);
    let tokens = pld_syntax::expand_program(&parsed.program, true);
    let file: syn::File = syn::parse2(tokens).expect("expansion parses as Rust");
    expected.assert_eq(&prettyplease::unparse(&file));
}

#[test]
fn all_reduce() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run(rounds: usize) {
                    let data = window!(f32, [1, 256]);
                    all_reduce!(data, op = max, mode = ring, nranks = 4);
                    for _ in 0..rounds {
                        all_reduce!(data);
                    }
                }
            }
        },
        expect_file!["snapshots/all_reduce.rs"],
    );
}

#[test]
fn all_gather() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run() {
                    let local = window!(u8, [1, 16]);
                    let target = window!(u8, [4, 16]);
                    let s = signal!();
                    loop {
                        all_gather!(local, target);
                        break;
                    }
                    all_gather!(local, target, signal = s);
                }
            }
        },
        expect_file!["snapshots/all_gather.rs"],
    );
}

#[test]
fn reduce_scatter() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run() {
                    let data = window!(bf16, [4, 16]);
                    while false {
                        reduce_scatter!(data, op = prod);
                    }
                }
            }
        },
        expect_file!["snapshots/reduce_scatter.rs"],
    );
}

#[test]
fn broadcast() {
    check(
        quote! {
            mod demo {
                const N: usize = 4;
                #[pld::host]
                pub fn run(root: usize) {
                    let data = window!(i64, [8]);
                    broadcast!(data, root = root);
                    broadcast!(data, root = 3, nranks = N);
                }
            }
        },
        expect_file!["snapshots/broadcast.rs"],
    );
}

#[test]
fn all_to_all() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run() {
                    let input = window!(f64, [4, 2]);
                    let target = window!(f64, [4, 2]);
                    for _ in 0..2 {
                        all_to_all!(input, target);
                    }
                }
            }
        },
        expect_file!["snapshots/all_to_all.rs"],
    );
}

#[test]
fn all_to_all_v() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run() -> Vec<i32> {
                    let input = window!(f32, [4 * 3, 2]);
                    let target = window!(f32, [4 * 3, 2]);
                    let send = window!(i32, [4]);
                    let recv = window!(i32, [4]);
                    for r in ranks() {
                        stage_in!(send, r, [1, 2, 3, 0]);
                    }
                    for _ in 0..3 {
                        all_to_all_v!(input, target, send, recv, nranks = 4);
                    }
                    let mut out = vec![0; 4];
                    stage_out!(recv, 0, out);
                    out
                }
            }
        },
        expect_file!["snapshots/all_to_all_v.rs"],
    );
}

#[test]
fn barrier() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run() -> usize {
                    let s = signal!();
                    barrier!();
                    for _ in 0..10 {
                        barrier!();
                        barrier!(s);
                    }
                    if world_size() > 1 {
                        return world_size();
                    }
                    0
                }
            }
        },
        expect_file!["snapshots/barrier.rs"],
    );
}

#[test]
fn reduce() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run(root: usize, rounds: usize) {
                    let data = window!(i64, [64]);
                    reduce!(data, root = 0);
                    for _ in 0..rounds {
                        reduce!(data, root = root, op = min, group = [0, 2]);
                    }
                }
            }
        },
        expect_file!["snapshots/reduce.rs"],
    );
}

#[test]
fn gather() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run() {
                    let local = window!(f32, [16]);
                    let rows = window!(f32, [4, 16]);
                    let s = signal!();
                    loop {
                        gather!(local, rows, root = 3);
                        break;
                    }
                    gather!(local, rows, root = 1, nranks = 4, signal = s);
                }
            }
        },
        expect_file!["snapshots/gather.rs"],
    );
}

#[test]
fn scatter() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run(g: &pld::Groups) {
                    let rows = window!(u8, [2, 16]);
                    let mine = window!(u8, [16]);
                    while false {
                        scatter!(rows, mine, root = 1, group = g);
                    }
                }
            }
        },
        expect_file!["snapshots/scatter.rs"],
    );
}

#[test]
fn all_gather_v() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run(g: &pld::Group) {
                    let local = window!(f32, [4, 8]);
                    let target = window!(f32, [16, 8]);
                    let counts = window!(i32, [4]);
                    all_gather_v!(local, target, counts);
                    for _ in 0..2 {
                        all_gather_v!(local, target, counts, group = g);
                    }
                }
            }
        },
        expect_file!["snapshots/all_gather_v.rs"],
    );
}

#[test]
fn premul_sum() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run(scale: f32) {
                    let data = window!(f32, [64]);
                    all_reduce!(data, op = premul_sum(scale));
                    reduce!(data, root = 0, op = premul_sum(0.5));
                }
            }
        },
        expect_file!["snapshots/premul_sum.rs"],
    );
}

#[test]
fn avg_and_auto() {
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run() {
                    let data = window!(f32, [64]);
                    all_reduce!(data, op = avg, mode = auto);
                    let rows = window!(i32, [4, 16]);
                    reduce_scatter!(rows, op = avg);
                }
            }
        },
        expect_file!["snapshots/avg_and_auto.rs"],
    );
}

#[test]
fn send_recv() {
    // No signal is hoisted: messages travel through the runtime's point-to-point area.
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run() {
                    let out = window!(f32, [8]);
                    let inbox = window!(f32, [8]);
                    let n = world_size();
                    for r in ranks() {
                        send!(out, to = (r + 1) % n, from = r);
                    }
                    for r in ranks() {
                        recv!(inbox, from = (r + n - 1) % n, to = r);
                    }
                    send!(out, to = 1, group = [0, 1]);
                    recv!(inbox, from = 0, nranks = 2);
                }
            }
        },
        expect_file!["snapshots/send_recv.rs"],
    );
}

#[test]
fn plain_tensor() {
    // A tensor operand is staged through a window of its own, and written back when the
    // collective writes it; a window operand is passed as it is.
    check(
        quote! {
            mod demo {
                #[pld::host]
                pub fn run(t: &mut pld::Tensor<f32>, input: &pld::Tensor<f32>) {
                    all_reduce!(t, op = max);
                    let out = window!(f32, [4, 2]);
                    all_gather!(input, out);
                    let mut owned = pld::Tensor::<f32>::zeros([4, 8]);
                    all_gather!(input, owned);
                    send!(input, to = 1, from = 0);
                }
            }
        },
        expect_file!["snapshots/plain_tensor.rs"],
    );
}
