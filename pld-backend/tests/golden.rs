//! Golden generated C (prost-build style): a few user kernels and builtin variants, compared
//! with the committed files under `tests/fixtures/`. After a deliberate change to generation,
//! review and refresh them with `UPDATE_EXPECT=1 cargo test -p pld-backend --test golden`.

use expect_test::expect_file;
use pld_model::{DType, KernelKind, KernelVariant, ReduceOp};

/// The user kernels of a program, lowered.
fn lowered(source: &str) -> String {
    let programs = pld_syntax::programs_in_file(source).expect("a valid program");
    let program = &programs[0];
    let module = program.ident.to_string();
    program.kernels().map(|k| pld_backend::lower_kernel(&module, k.ir.as_ref().expect("checked"))).collect()
}

#[test]
fn user_kernels() {
    let source = r#"
        #[pld::program]
        mod golden {
            #[pld::kernel]
            pub fn publish(input: &Tensor<f32>, data: &mut DistributedTensor<f32>) {
                let t = load(input, 0, len(input));
                store(data, 0, t);
            }

            #[pld::kernel]
            pub fn scaled_sum(data: &mut DistributedTensor<bf16>, signal: &DistributedTensor<i32>, scale: f32) {
                let me = rank();
                for p in 0..nranks() {
                    if p != me {
                        notify(signal, p, me, 1, AtomicAdd);
                        wait(signal, p, 1, Ge);
                    }
                }
                let acc = load(data, 0, len(data));
                let acc = add(acc, acc); // shadowing, as Rust allows
                let other = remote_load(data, (me + 1) % nranks(), 0, len(data));
                let sum = add(acc, other);
                for i in 0..len(sum) {
                    sum[i] = sum[i] * scale as f64;
                }
                store(data, 0, sum);
            }
        }
    "#;
    let c = lowered(source);
    expect_file!["fixtures/user_kernels.c"].assert_eq(&c);
    // And the generated C is valid, warning-free C against the ABI header.
    let dir = std::env::temp_dir().join(format!("pld-golden-{}", std::process::id()));
    let artifact =
        pld_backend::DeviceCompiler::new().opt_level(0).compile(&pld_backend::DeviceSource::new(c), &dir, "golden");
    let _ = std::fs::remove_dir_all(&dir);
    artifact.unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn builtin_variants() {
    let variants = [
        KernelVariant::reducing(KernelKind::AllReduceMesh, ReduceOp::Sum, DType::F32),
        KernelVariant::reducing(KernelKind::AllReduceTwoShot, ReduceOp::Sum, DType::F32),
        KernelVariant::reducing(KernelKind::AllReduceRing, ReduceOp::Max, DType::BF16),
        KernelVariant::reducing(KernelKind::ReduceScatter, ReduceOp::Prod, DType::I8),
        KernelVariant::reducing(KernelKind::AllReduceMesh, ReduceOp::Sum, DType::F8E4M3),
        KernelVariant::reducing(KernelKind::AllReduceRing, ReduceOp::Sum, DType::F8E5M2),
        KernelVariant::movement(KernelKind::AllToAllV),
        KernelVariant::movement(KernelKind::Barrier),
    ];
    let mut c: String = variants.into_iter().map(pld_backend::builtin_kernel).collect();
    // The ring kernels call the ring of their dtype (f32's for fp8), and the fp8 kernels the
    // f32-accumulating tile reduction: their text too.
    let library = pld_backend::builtin_source().to_c();
    for head in ["static int32_t pld_ring_max_bf16(", "static inline int32_t pld_reduce_all_sum_f8e4m3("] {
        let start = library.find(head).unwrap_or_else(|| panic!("{head} is generated"));
        let end = start + library[start..].find("\n}\n").expect("the function ends") + 3;
        c.push_str(&library[start..end]);
        c.push('\n');
    }
    expect_file!["fixtures/builtin_variants.c"].assert_eq(&c);
}
