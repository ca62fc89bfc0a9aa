// A 2 x 1 x 0.5 m box centred at the origin, in gmsh's built-in kernel (example input for
// geometry kind `file`; wavescat sets the element size, so no point sizes are given).
lx = 2; ly = 1; lz = 0.5;
Point(1) = {-lx/2, -ly/2, -lz/2};
Extrude {lx, 0, 0} { Point{1}; }
Extrude {0, ly, 0} { Line{1}; }
Extrude {0, 0, lz} { Surface{5}; }
