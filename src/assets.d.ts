// Files the binary carries as text (imported `with { type: "text" }`).
declare module "*/viewer" {
  const text: string;
  export default text;
}
