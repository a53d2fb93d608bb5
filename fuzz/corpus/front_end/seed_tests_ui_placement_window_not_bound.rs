#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        barrier!();
        let _ = (window!(f32, [4]), 1);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
