#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() -> Vec<u16> {
        let data = window!(u16, [4]);
        for r in ranks() {
            stage_in!(data, r, vec![1u16; 4]);
        }
        all_reduce!(data);
        broadcast!(data, root = 0);
        let mut out = vec![0u16; 4];
        stage_out!(data, 0, out);
        out
    }
}

fn main() {
    let world = pld::World::local(2).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
