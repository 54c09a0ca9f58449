// Instructor edition: open every exercise solution (they are closed dropdowns in the default book).
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll(".solution.dropdown, details.solution, .solution details").forEach((el) => {
    el.classList.remove("toggle-hidden");
    if (el.tagName === "DETAILS") el.open = true;
    el.querySelectorAll("details").forEach((d) => { d.open = true; });
  });
  document.querySelectorAll(".solution .toggle-details__summary, .solution button.toggle-button").forEach((b) => {
    if (b.getAttribute("aria-expanded") === "false") b.click();
  });
});
