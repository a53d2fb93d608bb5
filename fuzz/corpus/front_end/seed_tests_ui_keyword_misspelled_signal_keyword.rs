#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(f32, [4, 8]);
        let s = signal!();
        barrier!();
        all_reduce!(data, signl = s);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
