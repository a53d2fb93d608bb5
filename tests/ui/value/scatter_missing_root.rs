#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let rows = window!(f32, [4, 8]);
        let mine = window!(f32, [8]);
        scatter!(rows, mine);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
