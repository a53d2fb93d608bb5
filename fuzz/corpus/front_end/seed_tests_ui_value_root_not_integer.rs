#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(f32, [4, 8]);
        broadcast!(data, root = 1.5);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
