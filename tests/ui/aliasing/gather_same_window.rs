#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(f32, [4, 8]);
        gather!(data, data, root = 0);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
