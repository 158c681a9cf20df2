// URDF/SDF file -> what libsdformat builds of it (errors, links, joints) as JSON; compiled by test/test_gazebo_urdf.py
// against Debian's libsdformat (apt-get install libsdformat-dev), as Gazebo (ros_gz_sim create) reads a URDF.
#include <sdf/sdf.hh>
#include <iostream>
#include <string>
static std::string esc(const std::string &s) {
  std::string o;
  for (char c : s) { if (c == '"' || c == '\\') o += '\\'; if (c == '\n') { o += "\\n"; continue; } o += c; }
  return o;
}
int main(int argc, char **argv) {
  if (argc != 2) { std::cerr << "usage: sdf_check FILE\n"; return 2; }
  sdf::Root root;
  sdf::Errors errors = root.Load(argv[1]);
  std::cout << "{\"errors\": [";
  for (size_t i = 0; i < errors.size(); ++i) std::cout << (i ? ", " : "") << "\"" << esc(errors[i].Message()) << "\"";
  std::cout << "], ";
  const sdf::Model *m = root.Model();
  if (!m) { std::cout << "\"model\": null}\n"; return 0; }
  std::cout << "\"model\": \"" << esc(m->Name()) << "\", \"links\": [";
  for (uint64_t i = 0; i < m->LinkCount(); ++i)
    std::cout << (i ? ", " : "") << "\"" << esc(m->LinkByIndex(i)->Name()) << "\"";
  std::cout << "], \"joints\": [";
  for (uint64_t i = 0; i < m->JointCount(); ++i) {
    const sdf::Joint *j = m->JointByIndex(i);
    std::cout << (i ? ", " : "") << "[\"" << esc(j->Name()) << "\", \"" << esc(j->ParentLinkName()) << "\", \""
              << esc(j->ChildLinkName()) << "\", " << static_cast<int>(j->Type()) << "]";
  }
  std::cout << "]}\n";
  return 0;
}
