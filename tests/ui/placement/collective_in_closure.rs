#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(f32, [4]);
        (0..3).for_each(|_| all_reduce!(data));
    }
}

fn main() {
    let world = pld::World::local(2).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
