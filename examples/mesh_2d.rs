//! Data- plus tensor-parallel in one picture: 4 ranks as a 2 x 2 mesh, an all_reduce within
//! each row, then within each column, equals one all_reduce over the world, bit for bit (the
//! values are integers, so every order of additions gives the same bits).
//!
//! `cargo run --example mesh_2d`

#[pld::program]
mod mesh_2d {
    /// Row-then-column sums of each rank's data, and the world's sum of the same data.
    #[pld::host]
    pub fn rows_then_columns(rows: &pld::Groups, columns: &pld::Groups) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
        let by_mesh = window!(f32, [1024]);
        let by_world = window!(f32, [1024]);
        for r in ranks() {
            let data: Vec<f32> = (0..1024).map(|k| ((r * 1024 + k) % 1000) as f32).collect();
            stage_in!(by_mesh, r, data);
            stage_in!(by_world, r, data);
        }
        all_reduce!(by_mesh, group = rows); // within each row: {0, 1}, {2, 3}
        all_reduce!(by_mesh, group = columns); // then within each column: {0, 2}, {1, 3}
        all_reduce!(by_world);
        let (mut mesh_sums, mut world_sums) = (Vec::new(), Vec::new());
        for r in ranks() {
            let (mut a, mut b) = (vec![0.0; 1024], vec![0.0; 1024]);
            stage_out!(by_mesh, r, a);
            stage_out!(by_world, r, b);
            mesh_sums.push(a);
            world_sums.push(b);
        }
        (mesh_sums, world_sums)
    }
}

fn main() -> pld::Result<()> {
    let world = pld::World::local(4)?;
    // The mesh (rank r at row r / 2, column r % 2): axis 1 groups each row, axis 0 each column.
    let mesh = world.host()?.mesh(&[2, 2])?;
    let (rows, columns) = (mesh.axis(1).expect("two axes"), mesh.axis(0).expect("two axes"));
    for (axis, groups) in [("rows", rows), ("columns", columns)] {
        let members: Vec<&[usize]> = groups.groups().iter().map(pld::Group::members).collect();
        println!("{axis}: {members:?}");
    }
    let (by_mesh, by_world) = mesh_2d::load(&world)?.rows_then_columns(rows, columns)?;
    for (r, (m, w)) in by_mesh.iter().zip(&by_world).enumerate() {
        assert!(m.iter().zip(w).all(|(a, b)| a.to_bits() == b.to_bits()), "rank {r}: the mesh and the world differ");
        println!("rank {r}: [{}, {}, {}, ...] = the world's sum, bit for bit", m[0], m[1], m[2]);
    }
    println!("ok");
    Ok(())
}
