//! Every accepted form of all_reduce!.

#[pld::program]
mod demo {
    pub const NRANKS: usize = 2;

    #[pld::host]
    pub fn run() -> Vec<f32> {
        let data = window!(f32, [2, 3]);
        let s: pld::Window<'_, i32> = signal!();
        for r in ranks() {
            stage_in!(data, r, [1.0 + r as f32; 6]);
        }
        all_reduce!(data);
        all_reduce!(data,);
        all_reduce!(data, op = sum);
        all_reduce!(data, op = max, mode = mesh);
        all_reduce!(data, op = min, mode = ring);
        all_reduce!(data, op = max, mode = auto);
        all_reduce!(data, op = avg);
        all_reduce!(data, op = premul_sum(0.5), mode = ring);
        all_reduce!(data, op = prod, mode = ring, nranks = 2);
        all_reduce!(data, mode = ring, nranks = NRANKS, signal = s);
        all_reduce!(data, signal = s, op = max);
        pld::all_reduce!(data, mode = ring);
        ::pld::all_reduce!(data, op = min);
        for _ in 0..3 {
            all_reduce!(data, op = max);
        }
        let unit: () = all_reduce!(data, op = max);
        let () = unit;
        let mut out = vec![0.0; 6];
        stage_out!(data, 1, out);
        out
    }
}

fn main() {
    let world = pld::World::local(demo::NRANKS).unwrap();
    // ranks hold 1 and 2: sum 3, sum 6, sum 12, max, min, prod 144, sum 288, max, sum 576, then min and max
    assert_eq!(demo::load(&world).unwrap().run().unwrap(), vec![576.0; 6]);
}
