#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(bool, [4]);
        barrier!();
        let _ = data;
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
