#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let rows = window!(f32, [4, 8]);
        scatter!(rows, root = 0);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
